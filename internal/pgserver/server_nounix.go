//go:build !unix

package pgserver

import (
	"context"
	"errors"
	"os"
)

// Server is a running private PostgreSQL server; on Windows there is none.
type Server struct {
	dir, socketDir string
	prepared       bool
}

// Start is not supported on Windows: set DENSEMEM_DATABASE_URL to an external server.
func Start(context.Context, string, *Options) (*Server, error) {
	return nil, errors.New("embedded: a private PostgreSQL is not supported on Windows: set DENSEMEM_DATABASE_URL to a PostgreSQL 15+ server")
}

// Stop does nothing on Windows.
func (s *Server) Stop() error { return nil }

// Discard removes the data directory dir; on Windows there is no server to stop.
func Discard(_ context.Context, dir string, _ *Options) error { return os.RemoveAll(dir) }
