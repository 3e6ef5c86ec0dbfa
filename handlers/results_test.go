package handlers

import (
	"encoding/json"
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
	vm := resultVM("tools/call", raw, "/calls/x/contents")
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
