// Package slack shows rounds in Slack: the message a round is posted as,
// the modal its questions become, and the way back from what a person
// entered in Slack to the answers Rounds checks (forms' posted names).
//
// Everything a server sends is untrusted: it goes into plain_text text
// objects, never into mrkdwn, so a server cannot mention @channel, link or
// format. The few mrkdwn texts are Rounds' own words with names escaped.
package slack

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	goslack "github.com/slack-go/slack"

	"github.com/mcp-rounds/rounds/round"
)

// The action_ids of the buttons Rounds posts. Every button's value is the
// round's Ask.ID, and a round's modal carries it as private_metadata.
const (
	ActionAnswer  = "rounds_answer"  // opens the modal
	ActionOpen    = "rounds_open"    // a link to the round in Rounds (Slack still sends block_actions)
	ActionApprove = "rounds_approve" // accepts an approval (a form with no fields)
	ActionYes     = "rounds_yes"     // a single yes/no question: true
	ActionNo      = "rounds_no"      // a single yes/no question: false
	ActionDecline = "rounds_decline" // declines every question
	ActionCancel  = "rounds_cancel"  // cancels every question
	// ActionChoosePrefix and the option's index name a one-choice button.
	ActionChoosePrefix = "rounds_choose_"
)

// CallbackID is the callback_id of a round's modal.
const CallbackID = "rounds_round"

// Slack's limits (Block Kit reference) that decide whether a round fits.
const (
	maxModalBlocks   = 100
	maxMessageBlocks = 50
	maxText          = 3000 // a section's text
	maxLabel         = 2000 // an input's label and hint
	maxOptions       = 100  // a select's options
	maxChoices       = 5    // more become a select; Slack allows 10 radios or checkboxes
	maxOptionText    = 75
	maxTitle         = 24  // a modal's title
	maxHeader        = 150 // a header block's text
	maxButtonText    = 75
	maxQuickChoices  = 5 // one-choice buttons in a message
	maxMetadata      = 3000
)

// Ask is what Slack shows of a round.
type Ask struct {
	// ID names the round in button values and the modal's
	// private_metadata; the caller chooses it (at most 2000 characters).
	ID string
	// Title says what is asked, e.g. the tool call's name.
	Title string
	// From is the server or agent that asks; For is whom it asks (a person
	// or a team); Until is when the round expires.
	From, For string
	Until     time.Time
	// URL is the round's page in Rounds.
	URL string
	// Questions are the round's questions, as round.Parse reads them.
	Questions []round.Question
}

// Message is a Slack message: its notification text and its blocks.
type Message struct {
	Text   string          `json:"text"`
	Blocks []goslack.Block `json:"blocks"`
}

func plain(s string) *goslack.TextBlockObject {
	return goslack.NewTextBlockObject(goslack.PlainTextType, s, false, false)
}

func mrkdwn(s string) *goslack.TextBlockObject {
	return goslack.NewTextBlockObject(goslack.MarkdownType, s, false, false)
}

// escape makes a name safe inside mrkdwn: Slack reads &, < and > as
// control characters (links, mentions), and the docs say to escape them.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// shorten cuts s to at most n characters, ending in an ellipsis when cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// nonEmpty is s, or what stands for an empty text (Slack refuses "").
func nonEmpty(s, instead string) string {
	if strings.TrimSpace(s) == "" {
		return instead
	}
	return s
}

// slackDate is a time Slack shows in each reader's own time zone (format
// is Slack's, e.g. "{time}"), with a UTC fallback (layout is Go's) for
// clients that cannot.
func slackDate(t time.Time, format, layout string) string {
	return fmt.Sprintf("<!date^%d^%s|%s>", t.Unix(), format, t.UTC().Format(layout))
}

func button(actionID, text, value string, style goslack.Style) *goslack.ButtonBlockElement {
	b := goslack.NewButtonBlockElement(actionID, value, plain(shorten(text, maxButtonText)))
	b.Style = style
	return b
}

// openButton links to the round in Rounds.
func openButton(a Ask, style goslack.Style) *goslack.ButtonBlockElement {
	b := button(ActionOpen, "Open in Rounds", a.ID, style)
	b.URL = a.URL
	return b
}
