package testdb_test

// The package's tests fall back to a PostgreSQL container when Docker is available and no server is
// configured or running locally (densememtest/container registers the fallback).
import _ "github.com/densemem/densemem/densememtest/container"
