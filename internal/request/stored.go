package request

import (
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/memtype"
)

// StoredCitation is a citation as an observation records it: the request's citation and, when the
// cited item adopted an existing fragment, that fragment's ID (the ingest stores no fragment for an
// adopted item, so its evidence index alone would name nothing).
type StoredCitation struct {
	memtype.Citation
	AdoptFragmentID evidence.FragmentID `json:"adopt_fragment_id,omitempty"`
}
