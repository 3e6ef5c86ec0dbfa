package handlers

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/store"
)

// apiServer is a registered server as the API shows it to the caller.
type apiServer struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// Protocol is "auto" or the revision the server is pinned to;
	// ProtocolVersion is the one it was last found speaking ("" before).
	Protocol        string           `json:"protocol"`
	ProtocolVersion string           `json:"protocolVersion"`
	Sampling        bool             `json:"sampling"`
	Roots           bool             `json:"roots"`
	Authorization   apiAuthorization `json:"authorization"`
}

func (h *Handler) newAPIServer(ctx context.Context, srv *store.Server, person string) (apiServer, error) {
	authz, err := h.authorizationFor(ctx, srv, person)
	if err != nil {
		return apiServer{}, err
	}
	return apiServer{
		Name: srv.Name, URL: srv.URL, Protocol: srv.Protocol, ProtocolVersion: srv.ProtocolVersion,
		Sampling: srv.Sampling, Roots: srv.Roots, Authorization: authz,
	}, nil
}

// apiServers lists the enabled servers: GET /api/v1/servers.
func (h *Handler) apiServers(c echo.Context) error {
	ctx := c.Request().Context()
	srvs, err := h.store.Servers(ctx)
	if err != nil {
		return err
	}
	out := struct {
		Servers []apiServer `json:"servers"`
	}{Servers: []apiServer{}}
	for i := range srvs {
		s, err := h.newAPIServer(ctx, &srvs[i], h.person(c))
		if err != nil {
			return err
		}
		out.Servers = append(out.Servers, s)
	}
	return writeJSON(c, http.StatusOK, out)
}

// apiServerShow returns one server: GET /api/v1/servers/{name}.
func (h *Handler) apiServerShow(c echo.Context) error {
	ctx := c.Request().Context()
	srv, err := h.store.ServerByName(ctx, c.Param("server"))
	if err != nil {
		return err
	}
	s, err := h.newAPIServer(ctx, srv, h.person(c))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, s)
}

// apiServerTools lists a server's tools, each exactly as the server sent
// it (inputSchema included, byte for byte): GET /api/v1/servers/{name}/tools.
func (h *Handler) apiServerTools(c echo.Context) error {
	ctx := c.Request().Context()
	srv, err := h.store.ServerByName(ctx, c.Param("server"))
	if err != nil {
		return err
	}
	raw, err := h.catalog.RawTools(ctx, signedIn(ctx), srv)
	if err != nil {
		return err
	}
	// Written by hand: encoding/json would compact the server's bytes.
	body := []byte(`{"tools":[`)
	for i, t := range raw {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, t...)
	}
	body = append(body, "]}\n"...)
	return c.JSONBlob(http.StatusOK, body)
}
