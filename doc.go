// Package densemem is an embeddable, evidence-backed team memory on PostgreSQL.
//
// A host hands it a Store and gets a Client: Remember stores verbatim evidence, immutable
// observations and verification events, and places the relationships they support under the
// deterministic lifecycle rules; Trace explains any relationship down to its evidence bytes; Forget
// retracts the caller's own relationship without deleting history. Nothing is ever rewritten in
// place: every change of current state appends a transition in the same transaction.
//
// Runnable programs live in examples/.
//
// # Guided tour
//
// Apply the schema (once, as the owning role; every object lives in the schema "densemem"), then open
// a store, which checks that the schema is migrated:
//
//	err := migrations.Up(ctx, pool, nil)
//	st, err := postgres.Open(ctx, os.Getenv("DENSEMEM_DATABASE_URL"), nil) // ErrNotMigrated if not
//	client, err := densemem.New(st, nil) // SpanVerifier, time.Now, slog.Default
//
// Provision a team, its profiles and its vocabulary:
//
//	team, _ := client.CreateTeam(ctx, densemem.CreateTeamRequest{Name: "platform"})
//	admin, _ := client.CreateProfile(ctx, team, densemem.CreateProfileRequest{Name: "admin", Scopes: []densemem.Scope{"read", "vocabulary"}})
//	alice, _ := client.CreateProfile(ctx, team, densemem.CreateProfileRequest{Name: "alice", Scopes: []densemem.Scope{"read", "write"}})
//	client.RegisterPredicate(ctx, densemem.Principal{TeamID: team, ProfileID: admin}, densemem.PredicateDefinition{
//		Key: "deploys_from", RelationshipKind: "state", CurrentCardinality: "one"})
//
// The host may also administer and inspect a team as itself, without a profile, through
// HostPrincipal(team): it registers predicates, sets the policy (from the version in force), and
// lists profiles, predicates, conflict cases (overdue first) and review items, a page at a time. It
// never remembers or forgets; never hand it to an agent.
//
// Remember evidence and the relationships it states. Each relationship cites byte spans of the
// evidence; the Verifier checks them once per call; the placement says what happened to each:
//
//	pl, err := client.Remember(ctx, p, densemem.RememberRequest{Evidence: ..., Proposal: ..., IdempotencyKey: "k1"})
//	for _, o := range pl.RelationshipOutcomes { fmt.Println(o.Category, o.Status, o.Tier) }
//
// Same-owner current state is decided deterministically (relationship.Decide): an identical
// relationship gains support; state predicates of cardinality one are superseded only by evidence
// whose valid_from the verifier confirmed and which is later than the prior's; otherwise the new
// relationship is held as needs_review with explicit choices. Trace explains any relationship of the
// team down to its evidence bytes and transitions; Forget retracts the caller's own relationship;
// Erase, privacy erasure by a profile with the erasure scope or the host, redacts fragments' content
// for good, keeping tombstones and every reference.
// When one entity turns out to name two identities, PreviewSplit lists the caller's observations and
// relationships that may move and Split moves only the selected ones to a new entity (Merge moves
// them into an existing one); another profile's rows never move.
package densemem
