package handlers

import (
	"net/http"

	"github.com/klauspost/compress/gzhttp"
	"github.com/labstack/echo/v4"
)

// compress sends pages, fragments, JSON and static files compressed
// (zstd or gzip, as the client accepts) once they pass 1 KiB; smaller ones,
// most API answers among them, go as they are. The demo's MCP endpoint
// streams events and is left alone.
//
// gzhttp rather than echo's own gzip middleware: echo readies a gzip writer
// for every response, small or not, and resetting one clears its tables,
// which took about a tenth of an instance's CPU under the API's load
// (README, Performance). gzhttp starts an encoder only for a body past the
// minimum, and its encoders are faster.
var compress = func() echo.MiddlewareFunc {
	wrap, err := gzhttp.NewWrapper(gzhttp.MinSize(1024))
	if err != nil {
		panic(err) // the options above are valid
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if c.Request().URL.Path == "/demo/mcp" || isMCP(c.Request().URL.Path) {
				return next(c)
			}
			res := c.Response()
			plain := res.Writer
			defer func() { res.Writer = plain }() // a panic's page goes out plain
			var err error
			wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				res.Writer = w
				c.SetRequest(r)
				if err = next(c); err != nil {
					// Written now, while the encoder is open.
					c.Error(err)
					err = nil
				}
			})).ServeHTTP(plain, c.Request())
			return err
		}
	}
}()
