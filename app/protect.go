package app

import "os"

// ConfigFromEnvironment reads an instance's configuration from the
// process's environment, as cmd/web does: the process is made
// non-dumpable first (Protect), and Rounds' own secrets are then removed
// from the environment Go keeps.
func ConfigFromEnvironment() (Config, error) {
	if err := Protect(); err != nil {
		return Config{}, err
	}
	cfg, err := LoadConfig(os.Getenv)
	if err != nil {
		return cfg, err
	}
	forgetSecrets()
	return cfg, nil
}

// forgetSecrets removes Rounds' own secrets from the environment Go
// keeps, so that nothing started later inherits them or reads them again
// by mistake. It does not change /proc/<pid>/environ: Linux shows there
// the environment the process started with, whatever it does after;
// Protect is what keeps that from other processes.
func forgetSecrets() {
	for _, name := range []string{"DATABASE_URL", "DATABASE_DIRECT_URL", "DATABASE_READ_URL", "SESSION_KEYS",
		"CREDENTIALS_KEY", "ADMIN_PASSWORD", "OIDC_CLIENT_SECRET", "SMTP_URL"} {
		_ = os.Unsetenv(name)
	}
}
