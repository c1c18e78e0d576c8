package benchload_test

// The project's tests fall back to a PostgreSQL container when Docker is available and no server is
// configured or running locally (densememtest/container; README, "How the database is found").
import _ "github.com/densemem/densemem/densememtest/container"
