package round

import (
	"encoding/base64"
	"encoding/json"
)

// ResourceContents is a resources/read result's contents.
type ResourceContents struct {
	Contents []struct {
		URI      string  `json:"uri"`
		MIMEType string  `json:"mimeType"`
		Text     *string `json:"text"`
		Blob     *string `json:"blob"`
	} `json:"contents"`
}

// Blob is the binary contents i of a resources/read result, with the URI
// and type the server gave them; ok is false when there are none.
func Blob(result json.RawMessage, i int) (data []byte, uri, mimeType string, ok bool) {
	var r ResourceContents
	if err := json.Unmarshal(result, &r); err != nil || i < 0 || i >= len(r.Contents) || r.Contents[i].Blob == nil {
		return nil, "", "", false
	}
	item := r.Contents[i]
	data, err := base64.StdEncoding.DecodeString(*item.Blob)
	if err != nil {
		return nil, "", "", false
	}
	return data, item.URI, item.MIMEType, true
}
