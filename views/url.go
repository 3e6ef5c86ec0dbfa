package views

import (
	"fmt"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// urlVM prepares a URL-mode question's URL for the person to examine before
// they open it, as the spec asks of clients: the full URL with its host set
// apart, a link only for http and https, and a warning for each thing that
// makes a URL misleading. Nothing here fetches the URL.
func urlVM(raw string) *URLVM {
	vm := &URLVM{Full: raw, Before: raw}
	warn := func(kind, format string, args ...any) {
		vm.Warnings = append(vm.Warnings, URLWarning{Kind: kind, Text: fmt.Sprintf(format, args...)})
	}
	linkable := true
	if strings.ContainsFunc(raw, func(r rune) bool {
		return r == '\\' || unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError
	}) {
		warn("hidden", "The address contains spaces, backslashes or invisible characters, which browsers may read differently from how it looks here. It cannot be opened from here.")
		linkable = false
	}
	u, err := url.Parse(raw)
	if err != nil {
		warn("invalid", "This is not a valid address, so it cannot be opened from here.")
		return vm
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		if scheme == "" {
			warn("scheme", "This is not a web address: it does not start with http:// or https://. It is shown as text and cannot be opened from here.")
		} else {
			warn("scheme", "This is not a web address: it starts with “%s:”, not http:// or https://. It is shown as text and cannot be opened from here.", scheme)
		}
		linkable = false
	}
	host, start, ok := hostIn(raw, u)
	if !ok {
		if scheme == "http" || scheme == "https" {
			warn("invalid", "This address does not name a site, so it cannot be opened from here.")
		}
		return vm
	}
	vm.Before, vm.Host, vm.After = raw[:start], host, raw[start+len(host):]
	name := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if u.User != nil {
		warn("userinfo", "The address carries a user name or password (the part before “@”). The site it opens is %s, whatever that part says.", host)
	}
	if scheme == "http" {
		warn("http", "The address uses http, not https: the page is not encrypted, and others on the network could read or change it.")
	}
	if addr, err := netip.ParseAddr(name); err == nil {
		warn("ip", "The site is a bare IP address (%s), not a name, so nothing tells you who runs it.", addr)
	} else if numericHost(name) {
		warn("ip", "The site is written as a number (%s), which browsers read as an IP address.", host)
	}
	if p := u.Port(); p != "" && p != "80" && p != "443" {
		warn("port", "The address uses an unusual port (%s).", p)
	}
	if strings.Contains(host, "%") {
		warn("hidden", "The site's name is percent-encoded (%s), which hides what it says. It cannot be opened from here.", host)
		linkable = false
	}
	ascii := name
	if strings.ContainsFunc(name, func(r rune) bool { return r > unicode.MaxASCII }) {
		if a, err := idna.Lookup.ToASCII(name); err == nil {
			ascii = a
			warn("unicode", "The site's name has letters outside plain ASCII (%s), which can look like familiar letters but lead elsewhere. Browsers open it as %s.", scripts(name), a)
		} else {
			warn("unicode", "The site's name has letters outside plain ASCII (%s) that do not form a valid name. It cannot be opened from here.", scripts(name))
			linkable = false
		}
	} else if strings.HasPrefix(name, "xn--") || strings.Contains(name, ".xn--") {
		if uni, err := idna.Lookup.ToUnicode(name); err == nil && uni != name {
			warn("punycode", "The site's name is written in punycode (xn--…): it stands for “%s” (%s), which can imitate a familiar name.", uni, scripts(uni))
		} else {
			warn("punycode", "The site's name is written in punycode (xn--…) that does not decode to a valid name.")
		}
	}
	if d, err := publicsuffix.EffectiveTLDPlusOne(ascii); err == nil && d != ascii {
		vm.Domain = d
	}
	if linkable {
		vm.Href = raw
	}
	return vm
}

// hostIn finds the host of u in raw as written, so that the page can set it
// apart without re-encoding the URL. ok is false when raw has no host, or
// when where it sits is not plain to see.
func hostIn(raw string, u *url.URL) (host string, start int, ok bool) {
	if u.Host == "" || u.Opaque != "" {
		return "", 0, false
	}
	i := len(u.Scheme) + len("://")
	if len(raw) < i || !strings.EqualFold(raw[:i], u.Scheme+"://") {
		return "", 0, false
	}
	authority := raw[i:]
	if end := strings.IndexAny(authority, "/?#"); end >= 0 {
		authority = authority[:end]
	}
	start = i
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		start += at + 1
		authority = authority[at+1:]
	}
	host = authority
	if strings.HasPrefix(host, "[") {
		if end := strings.Index(host, "]"); end >= 0 {
			host = host[:end+1]
		}
	} else if colon := strings.LastIndex(host, ":"); colon >= 0 {
		host = host[:colon]
	}
	if host == "" {
		return "", 0, false
	}
	return host, start, true
}

// numericHost reports whether a host name would be read by browsers as an
// IPv4 address written oddly: its last label a decimal, octal or hex number.
func numericHost(name string) bool {
	labels := strings.Split(name, ".")
	last := labels[len(labels)-1]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		last = last[2:]
		return strings.Trim(last, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// scripts names the writing systems of the letters in s, such as
// "Cyrillic and Latin letters".
func scripts(s string) string {
	seen := map[string]bool{}
	for _, r := range s {
		if !unicode.IsLetter(r) {
			continue
		}
		for name, table := range unicode.Scripts {
			if unicode.Is(table, r) {
				seen[name] = true
				break
			}
		}
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	switch len(names) {
	case 0:
		return "no letters"
	case 1:
		return names[0] + " letters"
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " letters"
}
