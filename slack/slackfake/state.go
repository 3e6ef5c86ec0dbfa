package slackfake

import (
	"fmt"
	"slices"
)

// stateValues builds view.state.values (block_id → action_id → value) for
// the input blocks of a view, from answers by block_id.
func stateValues(view map[string]any, answers map[string]any) (map[string]any, error) {
	values := map[string]any{}
	used := map[string]bool{}
	blocks, _ := view["blocks"].([]any)
	for _, b := range blocks {
		bm, _ := b.(map[string]any)
		if bm["type"] != "input" {
			continue
		}
		blockID, _ := bm["block_id"].(string)
		el, _ := bm["element"].(map[string]any)
		actionID, _ := el["action_id"].(string)
		answer, has := answers[blockID]
		used[blockID] = has
		v, err := elementState(el, answer, has)
		if err != nil {
			return nil, fmt.Errorf("slackfake: block %q: %w", blockID, err)
		}
		values[blockID] = map[string]any{actionID: v}
	}
	for id := range answers {
		if _, ok := used[id]; !ok {
			return nil, fmt.Errorf("slackfake: the view has no input block %q", id)
		}
	}
	return values, nil
}

// elementState is one element's entry in state.values, as Slack writes it:
// null value or option when nothing was entered, [] for no options.
func elementState(el map[string]any, answer any, has bool) (map[string]any, error) {
	typ, _ := el["type"].(string)
	out := map[string]any{"type": typ}
	switch typ {
	case "plain_text_input", "number_input", "email_text_input", "url_text_input":
		out["value"] = nil
		if has {
			s, ok := answer.(string)
			if !ok {
				return nil, fmt.Errorf("%s takes a string, got %T", typ, answer)
			}
			out["value"] = s
		}
	case "datepicker":
		out["selected_date"] = nil
		if has {
			out["selected_date"] = answer
		}
	case "datetimepicker":
		out["selected_date_time"] = nil
		if has {
			n, ok := answer.(int64)
			if !ok {
				return nil, fmt.Errorf("datetimepicker takes an int64 UNIX time, got %T", answer)
			}
			out["selected_date_time"] = n
		}
	case "static_select", "radio_buttons":
		out["selected_option"] = nil
		if has {
			s, _ := answer.(string)
			o, err := pick(el, s)
			if err != nil {
				return nil, err
			}
			out["selected_option"] = o
		}
	case "multi_static_select", "checkboxes":
		chosen := []any{}
		list, _ := answer.([]string)
		if has && list == nil {
			return nil, fmt.Errorf("%s takes a []string, got %T", typ, answer)
		}
		for _, s := range list {
			o, err := pick(el, s)
			if err != nil {
				return nil, err
			}
			chosen = append(chosen, o)
		}
		out["selected_options"] = chosen
	default:
		return nil, fmt.Errorf("no state for element type %q", typ)
	}
	return out, nil
}

// pick finds the option with value s, as Slack sends it back (text and value).
func pick(el map[string]any, s string) (map[string]any, error) {
	opts, _ := el["options"].([]any)
	var values []string
	for _, o := range opts {
		om, _ := o.(map[string]any)
		if om["value"] == s {
			return map[string]any{"text": om["text"], "value": s}, nil
		}
		v, _ := om["value"].(string)
		values = append(values, v)
	}
	return nil, fmt.Errorf("%q is not one of the options %v", s, slices.Clip(values))
}
