package slack

import (
	"strconv"
	"strings"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/mcpclient"
)

// actionsBlockID is the block_id of a message's or modal's buttons.
const actionsBlockID = "rounds_actions"

// Outcomes a round's message can end with.
const (
	OutcomeAnswered  = "answered"
	OutcomeDeclined  = "declined"
	OutcomeCancelled = "cancelled"
	OutcomeExpired   = "expired"
	OutcomeEscalated = "escalated"
)

// End is how a round ended, for its updated message.
type End struct {
	Outcome string    // one of the Outcome constants
	By      string    // who answered, declined or cancelled; to whom it escalated
	At      time.Time // when
}

// Sentence says how the round ended, in mrkdwn with the name escaped and
// the time in each reader's zone: "Answered by ada at 14:02".
func (e End) Sentence() string {
	verb := map[string]string{OutcomeAnswered: "Answered", OutcomeDeclined: "Declined",
		OutcomeCancelled: "Cancelled", OutcomeExpired: "Expired", OutcomeEscalated: "Escalated"}[e.Outcome]
	if verb == "" {
		verb = "Closed"
	}
	by := ""
	switch {
	case e.By == "":
	case e.Outcome == OutcomeEscalated:
		by = " to " + escape(e.By)
	default:
		by = " by " + escape(e.By)
	}
	return verb + by + " at " + slackDate(e.At, "{time}", "15:04 UTC")
}

// NewMessage is the message a round is posted as: what is asked, by whom, for
// whom and until when, with buttons: Approve and Decline for an approval,
// Yes and No for a single yes/no question, one button per option for a
// single choice of up to five, else Answer (the modal) when the round fits
// one; Open in Rounds always.
func NewMessage(a Ask) Message {
	blocks := summary(a)
	ok, reason := Fits(a)
	if !ok {
		blocks = append(blocks, goslack.NewContextBlock("rounds_why", plain(shorten("Answer this in Rounds: "+reason, maxText))))
	}
	blocks = append(blocks, goslack.NewActionBlock(actionsBlockID, buttons(a, ok)...))
	return Message{Text: notice(a), Blocks: blocks}
}

// Ended is the message once the round has ended: the same summary, how it
// ended, and no buttons.
func Ended(a Ask, e End) Message {
	blocks := append(summary(a), goslack.NewContextBlock("rounds_end", mrkdwn(e.Sentence())))
	return Message{Text: escape(shorten(title(a), maxHeader)) + ": " + stripDate(e), Blocks: blocks}
}

// stripDate is an End's sentence for notifications, which show no dates.
func stripDate(e End) string {
	s := e.Sentence()
	return s[:strings.Index(s, " at <!date")]
}

func title(a Ask) string { return nonEmpty(a.Title, "A question for you") }

// notice is the message's text: what notifications and screen readers say.
// Slack reads a message's text as mrkdwn, so names are escaped.
func notice(a Ask) string {
	s := shorten(title(a), maxHeader)
	if a.From != "" {
		s += " — asked by " + a.From
	}
	if a.For != "" {
		s += " for " + a.For
	}
	return escape(shorten(s, maxText))
}

// summary is what both the posted and the ended message show.
func summary(a Ask) []goslack.Block {
	blocks := []goslack.Block{goslack.NewHeaderBlock(plain(shorten(title(a), maxHeader)))}
	var asked []string
	for _, q := range a.Questions {
		if m := strings.TrimSpace(q.Message); m != "" {
			asked = append(asked, m)
		}
	}
	if len(asked) > 0 {
		blocks = append(blocks, goslack.NewSectionBlock(plain(shorten(strings.Join(asked, "\n\n"), maxText)), nil, nil))
	}
	var fields []*goslack.TextBlockObject
	if a.From != "" {
		fields = append(fields, plain(shorten("From: "+a.From, maxLabel)))
	}
	if a.For != "" {
		fields = append(fields, plain(shorten("For: "+a.For, maxLabel)))
	}
	if !a.Until.IsZero() {
		fields = append(fields, mrkdwn("Until: "+slackDate(a.Until, "{date_short_pretty} at {time}", "2 Jan 2006 15:04 UTC")))
	}
	if len(fields) > 0 {
		blocks = append(blocks, goslack.NewSectionBlock(nil, fields, nil))
	}
	return blocks
}

// buttons are the message's buttons.
func buttons(a Ask, fits bool) []goslack.BlockElement {
	decline := button(ActionDecline, "Decline", a.ID, goslack.StyleDanger)
	if !fits {
		return []goslack.BlockElement{openButton(a, goslack.StylePrimary), decline}
	}
	open := openButton(a, "")
	fd, kind := quick(a)
	switch kind {
	case quickApprove:
		return []goslack.BlockElement{button(ActionApprove, "Approve", a.ID, goslack.StylePrimary), decline, open}
	case quickYesNo:
		return []goslack.BlockElement{button(ActionYes, "Yes", a.ID, goslack.StylePrimary), button(ActionNo, "No", a.ID, ""), decline, open}
	case quickChoice:
		var out []goslack.BlockElement
		for i, o := range fd.Options {
			out = append(out, button(ActionChoosePrefix+strconv.Itoa(i), nonEmpty(o.Label, emptyOption), a.ID, ""))
		}
		return append(out, decline, open)
	}
	return []goslack.BlockElement{button(ActionAnswer, "Answer", a.ID, goslack.StylePrimary), decline, open}
}

type quickKind int

const (
	quickNone quickKind = iota
	quickApprove
	quickYesNo
	quickChoice
)

// quick says whether the round is answered right in the message: one
// form question that is an approval (no fields), a single yes/no, or a
// single choice of up to five short options.
func quick(a Ask) (*forms.Field, quickKind) {
	if len(a.Questions) != 1 {
		return nil, quickNone
	}
	q := a.Questions[0]
	if q.Kind != mcpclient.KindForm || q.Form == nil || q.Form.Fallback || q.Unsupported != "" {
		return nil, quickNone
	}
	if q.Form.Empty {
		return nil, quickApprove
	}
	if len(q.Form.Fields) != 1 {
		return nil, quickNone
	}
	fd := &q.Form.Fields[0]
	switch fd.Kind {
	case forms.KindCheckbox:
		return fd, quickYesNo
	case forms.KindRadio, forms.KindSelect:
		if len(fd.Options) > maxQuickChoices {
			return nil, quickNone
		}
		for _, o := range fd.Options {
			if len([]rune(o.Label)) > maxButtonText {
				return nil, quickNone
			}
		}
		return fd, quickChoice
	}
	return nil, quickNone
}
