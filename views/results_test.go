package views

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

func TestToolResultContent(t *testing.T) {
	const png = "iVBORw0KGgo="
	raw := json.RawMessage(`{"isError":true,"structuredContent":{"b":1},"content":[
		{"type":"text","text":"<b>hi</b>"},
		{"type":"image","mimeType":"image/png","data":"` + png + `"},
		{"type":"image","mimeType":"image/svg+xml","data":"` + png + `"},
		{"type":"image","mimeType":"image/png","data":"not base64!"},
		{"type":"audio","mimeType":"audio/wav","data":"UklGRg=="},
		{"type":"resource_link","uri":"https://docs.test/a","name":"Docs"},
		{"type":"resource_link","uri":"javascript:alert(1)","name":"Trap"},
		{"type":"resource","resource":{"uri":"file:///x.txt","mimeType":"text/plain","text":"inside"}}]}`)
	vm := Result("tools/call", raw, "/calls/x/contents")
	if !vm.IsError || vm.Structured == "" || len(vm.Blocks) != 8 {
		t.Fatalf("vm = %+v", vm)
	}
	for i, want := range []struct {
		dataURL  string
		linkable bool
		text     string
	}{
		{text: "<b>hi</b>"},
		{dataURL: "data:image/png;base64," + png},
		{}, // SVG is not shown inline
		{}, // nor data that is not base64
		{dataURL: "data:audio/wav;base64,UklGRg=="},
		{linkable: true},
		{linkable: false},
		{text: "inside"},
	} {
		b := vm.Blocks[i]
		if b.DataURL != want.dataURL || b.Linkable != want.linkable || (want.text != "" && b.Text != want.text) {
			t.Errorf("block %d = %+v, want %+v", i, b, want)
		}
	}
}

// TestImagePreview: only PNG, JPEG, GIF and WebP images whose bytes are
// what the server says, up to previewMax, become data: URLs; anything else
// says why it is not shown.
func TestImagePreview(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	gif := []byte("GIF89a\x01\x00\x01\x00")
	jpeg := []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00")
	webp := []byte("RIFF\x24\x00\x00\x00WEBPVP8 ")
	big := append(append([]byte{}, png...), make([]byte, previewMax)...)
	for _, tc := range []struct {
		name, mime, data string
		shown            bool
		why              string
	}{
		{"PNG", "image/png", b64(png), true, ""},
		{"GIF", "image/gif", b64(gif), true, ""},
		{"JPEG", "image/jpeg", b64(jpeg), true, ""},
		{"WebP", "image/webp", b64(webp), true, ""},
		{"SVG", "image/svg+xml", b64([]byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)), false, "only PNG, JPEG, GIF and WebP"},
		{"AVIF", "image/avif", b64(png), false, "only PNG, JPEG, GIF and WebP"},
		{"NotBase64", "image/png", "not base64!", false, "not valid base64"},
		{"BytesOfAnotherType", "image/png", b64(gif), false, "not a image/png image"},
		{"HTMLCalledPNG", "image/png", b64([]byte("<html><script>alert(1)</script>")), false, "not a image/png image"},
		{"TooLarge", "image/png", b64(big), false, "larger than the 1.0 MiB shown here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, size, why := imagePreview(tc.mime, tc.data)
			if tc.shown {
				if url != "data:"+tc.mime+";base64,"+tc.data || why != "" || size == "" {
					t.Errorf("imagePreview = %q, %q, %q; want it shown as a data: URL of %s", url, size, why, tc.mime)
				}
				return
			}
			if url != "" || !strings.Contains(why, tc.why) {
				t.Errorf("imagePreview = %q, %q; want it not shown, because %q", url, why, tc.why)
			}
		})
	}
}

// TestPromptAndResourceResults renders what prompts and resources return.
func TestPromptAndResourceResults(t *testing.T) {
	t.Parallel()
	vm := Result("prompts/get", json.RawMessage(`{"description":"D","messages":[
		{"role":"user","content":{"type":"text","text":"<script>x</script>"}},
		{"role":"assistant","content":{"type":"resource","resource":{"uri":"r://a","mimeType":"text/plain","text":"embedded"}}}]}`), "/c/")
	if vm.Kind != "prompt" || vm.Description != "D" || len(vm.Messages) != 2 || vm.Messages[0].Blocks[0].Text != "<script>x</script>" ||
		vm.Messages[1].Blocks[0].Text != "embedded" {
		t.Errorf("prompt = %+v", vm)
	}
	vm = Result("resources/read", json.RawMessage(`{"contents":[
		{"uri":"a://t","mimeType":"text/plain","text":"hello"},
		{"uri":"a://b.png","mimeType":"image/png","blob":"iVBORw0KGgo="},
		{"uri":"a://bad","blob":"%%%"}]}`), "/calls/x/contents/")
	if len(vm.Contents) != 3 || vm.Contents[0].Text != "hello" || vm.Contents[1].Href != "/calls/x/contents/1" ||
		vm.Contents[1].Size != "8 bytes" || !vm.Contents[2].Blob || vm.Contents[2].Href != "" {
		t.Errorf("contents = %+v", vm.Contents)
	}
}
