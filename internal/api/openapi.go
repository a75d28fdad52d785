package api

import (
	_ "embed"
	"net/http"
)

// openapiDoc is the OpenAPI 3 description of every route, served without
// auth. TestOpenAPI_DocumentsEveryRoute keeps it and the routes in step.
//
//go:embed openapi.json
var openapiDoc []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openapiDoc)
	return nil
}
