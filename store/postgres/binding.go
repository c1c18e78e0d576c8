package postgres

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/densemem/densemem/identity"
)

// SessionBinding returns the value that binds a transaction on the backend with process ID pid to
// team and actor (store.WithActor; "" for none): the hex HMAC-SHA256, under key, of
// "<team>:<actor>:<pid>". The store sends it as densemem.binding
// in the batch that opens each transaction; the database's densemem_bound_team() (migration 25)
// recomputes it with the keys only the owner role can read, and row-level security, the erasure
// function and the search functions admit the team only when it matches. Without the key, a holder
// of the runtime or reviewer credentials cannot bind another team (or any team).
func SessionBinding(key []byte, team identity.TeamID, actor string, pid uint32) string {
	if len(key) == 0 || team == "" {
		return ""
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(string(team) + ":" + actor + ":" + strconv.FormatUint(uint64(pid), 10)))
	return hex.EncodeToString(m.Sum(nil))
}
