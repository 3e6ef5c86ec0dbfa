package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	gomail "github.com/wneessen/go-mail"

	"github.com/mcp-rounds/rounds/queue"
	"github.com/mcp-rounds/rounds/store"
)

// approvalMessage writes the mail asking a person's approval: it is
// Rounds' question, not the server's. It names the server, the tool, who
// started the call and the arguments asked, with the link to decide and
// the deadline. What the server or the caller wrote is plain text.
func (e *Engine) approvalMessage(a queue.MailArgs, m *store.RoundMail, links []mailLink) (*gomail.Msg, error) {
	link := strings.TrimRight(e.cfg.PublicURL, "/") + "/calls/" + a.CallID
	subject := fmt.Sprintf("Rounds asks for your approval: %s on %s", oneLine(m.Target, 60), oneLine(m.Server, 60))
	deadline := m.ExpiresAt.UTC().Format("Monday 2 January 2006, 15:04 MST")
	args := string(m.InputRequests)
	var pretty bytes.Buffer
	if json.Indent(&pretty, m.InputRequests, "", "  ") == nil {
		args = pretty.String()
	}
	if len(args) > 2000 {
		args = args[:2000] + " …"
	}
	body := fmt.Sprintf("Rounds asks for your approval before a tool runs: the server has not seen this call.\n\n"+
		"Server: %s\nTool: %s\nStarted by: %s\n\nThe arguments:\n\n%s\n\nApprove, change or decline it here: %s\n\n"+
		"%sDecide by %s; after that the call ends declined.\n\n"+
		"You get this because an approval rule of the server names you. You can turn these mails off on your account page: %s\n",
		plainText(m.Server), plainText(m.Target), m.Owner, indent(plainText(args)), link, linksText(links, "decide"), deadline,
		strings.TrimRight(e.cfg.PublicURL, "/")+"/account")
	return e.mailMessage(m.Email, subject, body)
}
