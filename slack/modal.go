package slack

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	goslack "github.com/slack-go/slack"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
)

// valueActionID is the action_id of every input's element: the block_id
// already names the field.
const valueActionID = "v"

// NotFit says why a round cannot be answered in a Slack modal; the message
// then offers Open in Rounds instead of Answer.
type NotFit struct{ Reason string }

func (e *NotFit) Error() string { return "slack: the round does not fit a modal: " + e.Reason }

// BlockID is the block_id of field j of question i in a round's modal:
// positions only, never the server's property names.
func BlockID(i, j int) string { return fmt.Sprintf("q%d.f%d", i, j) }

// Fits reports whether a round can be answered faithfully in a Slack
// modal, and if not, why (a sentence for the person).
func Fits(a Ask) (ok bool, reason string) {
	if _, err := Modal(a); err != nil {
		return false, err.(*NotFit).Reason
	}
	return true, ""
}

// Modal is the modal a round's questions become. Decline and Cancel are
// buttons at its top (block_actions, like the message's), so that no
// required field stands in their way; Close leaves the round waiting; Send
// submits the answers. It returns a *NotFit for a round Slack cannot show
// faithfully: a URL-mode, sampling or roots question, a question Rounds
// shows as JSON, or anything over Slack's limits. A title over 24
// characters is shortened instead.
func Modal(a Ask) (goslack.ModalViewRequest, error) {
	var v goslack.ModalViewRequest
	if utf8.RuneCountInString(a.ID) > maxMetadata {
		return v, &NotFit{"the round's reference is too long for Slack."}
	}
	blocks := []goslack.Block{
		goslack.NewContextBlock("rounds_about", mrkdwn(about(a))),
		goslack.NewActionBlock(actionsBlockID,
			button(ActionDecline, "Decline", a.ID, goslack.StyleDanger),
			button(ActionCancel, "Cancel", a.ID, ""),
			openButton(a, "")),
	}
	for i, q := range a.Questions {
		qb, err := questionBlocks(i, q, len(a.Questions) > 1)
		if err != nil {
			return v, err
		}
		blocks = append(blocks, qb...)
	}
	if len(blocks) > maxModalBlocks {
		return v, &NotFit{fmt.Sprintf("the form needs %d blocks and a Slack modal holds %d.", len(blocks), maxModalBlocks)}
	}
	v = goslack.ModalViewRequest{
		Type:            goslack.VTModal,
		Title:           plain(shorten(nonEmpty(a.Title, "Answer"), maxTitle)),
		Close:           plain("Close"),
		Submit:          plain("Send"),
		Blocks:          goslack.Blocks{BlockSet: blocks},
		PrivateMetadata: a.ID,
		CallbackID:      CallbackID,
	}
	return v, nil
}

// about says who asks, for whom and until when, in mrkdwn with names escaped.
func about(a Ask) string {
	var parts []string
	if a.From != "" {
		parts = append(parts, "Asked by "+escape(a.From))
	}
	if a.For != "" {
		parts = append(parts, "for "+escape(a.For))
	}
	if !a.Until.IsZero() {
		parts = append(parts, "until "+slackDate(a.Until, "{date_short_pretty} at {time}", "2 Jan 2006 15:04 UTC"))
	}
	s := strings.Join(parts, " ")
	if s == "" {
		return "Asked through Rounds"
	}
	return shorten(s, maxText)
}

// questionBlocks are question i's blocks: its message, then one input per field.
func questionBlocks(i int, q round.Question, several bool) ([]goslack.Block, error) {
	n := i + 1
	switch {
	case q.Kind == mcpclient.KindURL:
		return nil, &NotFit{fmt.Sprintf("question %d asks you to open a page, which only Rounds shows safely.", n)}
	case q.Kind == mcpclient.KindSampling:
		return nil, &NotFit{fmt.Sprintf("question %d asks you to write a model's reply.", n)}
	case q.Kind == mcpclient.KindRoots:
		return nil, &NotFit{fmt.Sprintf("question %d is about which folders the server may see.", n)}
	case q.Unsupported != "" || q.Form == nil:
		return nil, &NotFit{fmt.Sprintf("question %d cannot be answered here.", n)}
	case q.Form.Fallback:
		return nil, &NotFit{fmt.Sprintf("question %d is answered as JSON.", n)}
	}
	var blocks []goslack.Block
	if several {
		blocks = append(blocks, goslack.NewDividerBlock())
	}
	if msg := strings.TrimSpace(q.Message); msg != "" {
		if utf8.RuneCountInString(msg) > maxText {
			return nil, &NotFit{fmt.Sprintf("question %d's text is over Slack's %d characters.", n, maxText)}
		}
		blocks = append(blocks, goslack.NewSectionBlock(plain(msg), nil, nil))
	}
	loc := formZone(q)
	for j := range q.Form.Fields {
		b, reason := input(&q.Form.Fields[j], BlockID(i, j), loc)
		if reason != "" {
			return nil, &NotFit{fmt.Sprintf("in question %d, %s", n, reason)}
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// formZone is the time zone a question's form writes date-times in.
func formZone(q round.Question) *time.Location {
	if loc, err := time.LoadLocation(q.Form.TimeZone); err == nil {
		return loc
	}
	return time.UTC
}
