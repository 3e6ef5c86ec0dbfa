package views

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
)

// Audio types played inline as data URLs. Anything else is described,
// never rendered.
var inlineAudio = regexp.MustCompile(`^audio/(wav|x-wav|mpeg|mp3|ogg|webm|aac|flac)$`)

// previewImages are the image types shown inline: raster formats a browser
// only draws. SVG, which may carry script and fetch, is never among them.
var previewImages = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// previewMax is the largest image shown inline, decoded; a larger one is
// described instead, so that one result cannot make a page of megabytes.
const previewMax = 1 << 20

// Result renders a server's final result. Every string stays text.
// downloads is where a resource's binary contents are downloaded from,
// followed by their index.
func Result(method string, raw json.RawMessage, downloads string) *ResultVM {
	switch method {
	case mcpclient.MethodGetPrompt:
		return promptVM(raw)
	case mcpclient.MethodReadResource:
		return contentsVM(raw, downloads)
	case mcpclient.MethodCallTool:
	default:
		return &ResultVM{Raw: prettyJSON(raw)}
	}
	var r struct {
		Content           []round.Content `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return &ResultVM{Raw: prettyJSON(raw)}
	}
	vm := &ResultVM{IsError: r.IsError, Kind: "tool"}
	for _, c := range r.Content {
		vm.Blocks = append(vm.Blocks, contentVM(c))
	}
	if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		vm.Structured = prettyJSON(r.StructuredContent)
	}
	return vm
}

// promptVM renders a prompts/get result: its description and messages.
func promptVM(raw json.RawMessage) *ResultVM {
	var r struct {
		Description string `json:"description"`
		Messages    []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return &ResultVM{Raw: prettyJSON(raw)}
	}
	vm := &ResultVM{Kind: "prompt", Description: r.Description}
	for _, m := range r.Messages {
		vm.Messages = append(vm.Messages, messageVM(m.Role, m.Content))
	}
	return vm
}

// contentsVM renders a resources/read result: text as text, and binary
// contents as a link to download them, never shown.
func contentsVM(raw json.RawMessage, downloads string) *ResultVM {
	var r round.ResourceContents
	if err := json.Unmarshal(raw, &r); err != nil {
		return &ResultVM{Raw: prettyJSON(raw)}
	}
	vm := &ResultVM{Kind: "resource"}
	for i, c := range r.Contents {
		item := ResourceContentVM{URI: c.URI, MIMEType: c.MIMEType}
		switch {
		case c.Blob != nil:
			item.Blob = true
			if data, err := base64.StdEncoding.DecodeString(*c.Blob); err == nil {
				item.Href = downloads + strconv.Itoa(i)
				item.Size = byteSize(len(data))
			}
		case c.Text != nil:
			item.Text = *c.Text
		}
		vm.Contents = append(vm.Contents, item)
	}
	return vm
}

// byteSize says how large n bytes are, for people.
func byteSize(n int) string {
	switch {
	case n == 1:
		return "1 byte"
	case n < 1<<10:
		return strconv.Itoa(n) + " bytes"
	case n < 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}

func contentVM(c round.Content) ContentVM {
	b := ContentVM{Type: c.Type, Text: c.Text, MIMEType: c.MIMEType, URI: c.URI, Name: c.Name, Title: c.Title}
	switch c.Type {
	case "image":
		b.DataURL, b.Size, b.Note = imagePreview(c.MIMEType, c.Data)
	case "audio":
		if inlineAudio.MatchString(c.MIMEType) && isBase64(c.Data) {
			b.DataURL = "data:" + c.MIMEType + ";base64," + c.Data
		}
	case "resource_link":
		b.Linkable = isWebURL(c.URI)
	case "resource":
		if c.Resource != nil {
			b.URI, b.MIMEType, b.Text = c.Resource.URI, c.Resource.MIMEType, c.Resource.Text
			if c.Resource.Blob != "" && b.Text == "" {
				b.Text = "(binary content, " + c.Resource.MIMEType + ")"
			}
		}
	case "text":
	default:
		raw, _ := json.Marshal(c)
		b.Text = string(raw)
	}
	return b
}

// imagePreview is the data: URL an image is shown from, with its size, or
// why it is not shown. Only the raster types of previewImages, up to
// previewMax, whose bytes are what the server says they are, are shown.
func imagePreview(mimeType, data string) (dataURL, size, why string) {
	if !previewImages[mimeType] {
		return "", "", "only PNG, JPEG, GIF and WebP images are shown"
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil || len(raw) == 0 {
		return "", "", "its data is not valid base64"
	}
	size = byteSize(len(raw))
	if len(raw) > previewMax {
		return "", size, "it is " + size + ", larger than the " + byteSize(previewMax) + " shown here"
	}
	if http.DetectContentType(raw) != mimeType {
		return "", size, "its bytes are not a " + mimeType + " image"
	}
	return "data:" + mimeType + ";base64," + base64.StdEncoding.EncodeToString(raw), size, ""
}

func isBase64(s string) bool {
	if s == "" {
		return false
	}
	_, err := base64.StdEncoding.DecodeString(s)
	return err == nil
}

// isWebURL reports whether s is an absolute http or https URL.
func isWebURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
