package handlers

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openAPI is the OpenAPI 3.1 document of the JSON API. Tests check every
// route under /api/v1 against it, and real responses against its schemas.
//
//go:embed openapi.json
var openAPI []byte

// apiOpenAPI serves the document: GET /api/v1/openapi.json.
func (h *Handler) apiOpenAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openAPI)
}
