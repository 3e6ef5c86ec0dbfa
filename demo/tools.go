package demo

import (
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tools lists the demo tools, each with its inputSchema set.
func (d *demo) tools() []*tool {
	ts := []*tool{
		d.currentTime(),
		confirmDelete(),
		collectUserInfo(),
		d.bookFlight(),
		createTask(),
		selectTags(),
		schedule(),
		connectAccount(),
		approve(),
		writeHaiku(),
		showRoots(),
		generateReport(),
		deployRelease(),
	}
	for _, t := range ts {
		t.def.InputSchema = t.input.raw
	}
	return ts
}

// noArguments is the inputSchema of a tool that takes none.
const noArguments = `{"type":"object","properties":{}}`

// fixed is a round that always asks the same questions.
func fixed(qs ...question) func(*call) []question {
	return func(*call) []question { return qs }
}

// stopped returns the result for a declined or cancelled call, or nil.
func stopped(c *call, declined string) *mcp.CallToolResult {
	switch c.action {
	case "decline":
		return text(declined)
	case "cancel":
		return text("Cancelled")
	}
	return nil
}

func (d *demo) currentTime() *tool {
	return &tool{
		def: &mcp.Tool{
			Name:        "current_time",
			Title:       "Current time",
			Description: "Tells the server's current time in UTC. Asks nothing.",
		},
		input: mustForm(noArguments),
		finish: func(*call) *mcp.CallToolResult {
			return text("The time is " + d.now().UTC().Format(time.RFC3339))
		},
	}
}

func confirmDelete() *tool {
	confirm := mustForm(`{"type":"object","properties":{
		"confirm":{"type":"boolean","title":"Delete it?","default":false}},
		"required":["confirm"]}`)
	return &tool{
		def: &mcp.Tool{
			Name:        "confirm_delete",
			Title:       "Delete a file",
			Description: "Deletes a file once the user confirms (a demo: nothing is really deleted).",
		},
		input: mustForm(`{"type":"object","properties":{
			"path":{"type":"string","title":"Path","description":"The file to delete","minLength":1}},
			"required":["path"]}`),
		rounds: []func(*call) []question{func(c *call) []question {
			return []question{{key: "confirm", form: confirm,
				message: fmt.Sprintf("Delete %s? This cannot be undone.", c.args["path"])}}
		}},
		finish: func(c *call) *mcp.CallToolResult {
			path := c.args["path"]
			if c.action == "cancel" {
				return text("Cancelled")
			}
			if c.action == "accept" && c.answers["confirm"]["confirm"] == true {
				return text(fmt.Sprintf("Deleted %s", path))
			}
			return text(fmt.Sprintf("Kept %s", path))
		},
	}
}

func collectUserInfo() *tool {
	user := mustForm(`{"type":"object","properties":{
		"name":{"type":"string","title":"Name","minLength":1,"maxLength":100},
		"age":{"type":"integer","title":"Age","minimum":0,"maximum":150}},
		"required":["name"]}`)
	return &tool{
		def: &mcp.Tool{
			Name:        "collect_user_info",
			Title:       "Introduce yourself",
			Description: "Asks for your name and, optionally, your age, then greets you.",
		},
		input:  mustForm(noArguments),
		rounds: []func(*call) []question{fixed(question{key: "user", form: user, message: "Tell us about yourself."})},
		finish: func(c *call) *mcp.CallToolResult {
			if r := stopped(c, "No details shared."); r != nil {
				return r
			}
			a := c.answers["user"]
			greeting := fmt.Sprintf("Hello, %s!", a["name"])
			if age, ok := number(a["age"]); ok {
				greeting += fmt.Sprintf(" You are %d.", int(age))
			}
			return text(greeting)
		},
	}
}

func (d *demo) bookFlight() *tool {
	trip := mustForm(`{"type":"object","properties":{
		"destination":{"type":"string","title":"Destination","description":"City or airport","minLength":2,"maxLength":60},
		"date":{"type":"string","format":"date","title":"Departure date"}},
		"required":["destination","date"]}`)
	party := mustForm(`{"type":"object","properties":{
		"passengers":{"type":"integer","title":"Passengers","minimum":1,"maximum":9,"default":1}},
		"required":["passengers"]}`)
	seat := mustForm(`{"type":"object","properties":{
		"class":{"type":"string","title":"Class","oneOf":[
			{"const":"economy","title":"Economy"},
			{"const":"premium","title":"Premium economy"},
			{"const":"business","title":"Business"}],"default":"economy"}},
		"required":["class"]}`)
	notPast := func(a map[string]any) string {
		// Dates in this format sort as strings.
		if a["date"].(string) < d.now().UTC().Format(time.DateOnly) {
			return "Departure date must be today or later"
		}
		return ""
	}
	return &tool{
		def: &mcp.Tool{
			Name:        "book_flight",
			Title:       "Book a flight",
			Description: "Books a flight in two rounds: where, when and for how many, then the class (a demo: nothing is booked).",
		},
		input: mustForm(noArguments),
		rounds: []func(*call) []question{
			fixed(
				question{key: "trip", form: trip, check: notPast, message: "Where and when do you want to fly?"},
				question{key: "party", form: party, message: "How many people are travelling?"},
			),
			func(c *call) []question {
				return []question{{key: "seat", form: seat, message: fmt.Sprintf("Which class for %s to %s on %s?",
					people(c.answers["party"]["passengers"]), c.answers["trip"]["destination"], c.answers["trip"]["date"])}}
			},
		},
		finish: func(c *call) *mcp.CallToolResult {
			switch c.action {
			case "decline":
				return text("Booking declined: no flight was booked.")
			case "cancel":
				return text("Booking cancelled: no flight was booked.")
			}
			n, _ := number(c.answers["party"]["passengers"])
			booking := map[string]any{
				"destination": c.answers["trip"]["destination"],
				"date":        c.answers["trip"]["date"],
				"passengers":  int(n),
				"class":       c.answers["seat"]["class"],
			}
			r := text(fmt.Sprintf("Booked %s to %s on %s, %s class.", people(n), booking["destination"], booking["date"],
				title(seat.Properties["class"].OneOf, booking["class"].(string))))
			r.StructuredContent = booking
			return r
		},
	}
}

// people says "1 passenger" or "3 passengers".
func people(v any) string {
	n, _ := number(v)
	return fmt.Sprintf("%d %s", int(n), plural(int(n), "passenger"))
}

func createTask() *tool {
	task := mustForm(`{"type":"object","properties":{
		"title":{"type":"string","title":"Title","description":"What needs doing","minLength":3,"maxLength":80},
		"description":{"type":"string","title":"Description","maxLength":500},
		"due":{"type":"string","format":"date","title":"Due date"},
		"priority":{"type":"string","title":"Priority","enum":["low","medium","high"],"default":"medium"},
		"estimate":{"type":"number","title":"Estimate (hours)","minimum":0,"maximum":1000,"default":1.5},
		"points":{"type":"integer","title":"Story points","minimum":0,"maximum":100,"default":3},
		"urgent":{"type":"boolean","title":"Urgent","default":false},
		"notify":{"type":"string","format":"email","title":"Notify (email)","description":"Who hears when it is done"},
		"link":{"type":"string","format":"uri","title":"Link","description":"A related page"},
		"tags":{"type":"array","title":"Tags","items":{"type":"string","enum":["bug","feature","docs","chore"]},"default":["feature"]}},
		"required":["title","priority"]}`)
	return &tool{
		def: &mcp.Tool{
			Name:        "create_task",
			Title:       "Create a task",
			Description: "Asks for a task in one form that uses every field type: text, date, choice, numbers, yes/no, email, link and tags.",
		},
		input:  mustForm(noArguments),
		rounds: []func(*call) []question{fixed(question{key: "task", form: task, message: "Describe the new task."})},
		finish: func(c *call) *mcp.CallToolResult {
			if r := stopped(c, "No task created."); r != nil {
				return r
			}
			a := c.answers["task"]
			r := text(fmt.Sprintf("Created task %q with %s priority.", a["title"], a["priority"]))
			r.StructuredContent = a
			return r
		},
	}
}

func selectTags() *tool {
	tags := mustForm(`{"type":"object","properties":{
		"tags":{"type":"array","title":"Tags","description":"Pick one to three","minItems":1,"maxItems":3,
			"items":{"anyOf":[
				{"const":"bug","title":"Bug"},
				{"const":"feature","title":"Feature"},
				{"const":"docs","title":"Documentation"},
				{"const":"ux","title":"User experience"}]},
			"default":["feature"]}},
		"required":["tags"]}`)
	return &tool{
		def: &mcp.Tool{
			Name:        "select_tags",
			Title:       "Choose tags",
			Description: "Asks for one to three tags from a titled list.",
		},
		input:  mustForm(noArguments),
		rounds: []func(*call) []question{fixed(question{key: "tags", form: tags, message: "Which tags apply?"})},
		finish: func(c *call) *mcp.CallToolResult {
			if r := stopped(c, "No tags chosen."); r != nil {
				return r
			}
			var names []string
			for _, v := range c.answers["tags"]["tags"].([]any) {
				names = append(names, title(tags.Properties["tags"].Items.AnyOf, v.(string)))
			}
			return text("Tagged: " + strings.Join(names, ", "))
		},
	}
}

func schedule() *tool {
	when := mustForm(`{"type":"object","properties":{
		"date":{"type":"string","format":"date","title":"Day"},
		"reminder":{"type":"string","format":"date-time","title":"Remind me at","description":"When to remind you"}},
		"required":["date","reminder"]}`)
	return &tool{
		def: &mcp.Tool{
			Name:        "schedule",
			Title:       "Schedule a meeting",
			Description: "Asks for a day and a reminder time.",
		},
		input:  mustForm(noArguments),
		rounds: []func(*call) []question{fixed(question{key: "when", form: when, message: "When should we meet?"})},
		finish: func(c *call) *mcp.CallToolResult {
			if r := stopped(c, "Nothing scheduled."); r != nil {
				return r
			}
			a := c.answers["when"]
			return text(fmt.Sprintf("Scheduled for %s, reminder at %s.", a["date"], a["reminder"]))
		},
	}
}

func connectAccount() *tool {
	return &tool{
		def: &mcp.Tool{
			Name:        "connect_account",
			Title:       "Connect an account",
			Description: "Sends you to a web page to connect an outside account (URL-mode elicitation).",
		},
		input: mustForm(noArguments),
		rounds: []func(*call) []question{func(*call) []question {
			return []question{{key: "connect", message: "Open this page to connect your Example account, then continue.",
				url: "https://example.com/connect?session=" + randomID()}}
		}},
		finish: func(c *call) *mcp.CallToolResult {
			if r := stopped(c, "Not connected"); r != nil {
				return r
			}
			return text("Connected")
		},
	}
}

func approve() *tool {
	return &tool{
		def: &mcp.Tool{
			Name:        "approve",
			Title:       "Approve a request",
			Description: "Asks a plain yes or no, with no fields to fill in.",
		},
		input:  mustForm(noArguments),
		rounds: []func(*call) []question{fixed(question{key: "approval", form: mustForm(noArguments), message: "Approve the pending request?"})},
		finish: func(c *call) *mcp.CallToolResult {
			if r := stopped(c, "Declined"); r != nil {
				return r
			}
			return text("Approved")
		},
	}
}
