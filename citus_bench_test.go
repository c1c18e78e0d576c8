package densemem_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/densemem/densemem/internal/testsupport/testdb"
)

// citusBenchCases is how many due cases one op of the nightly comparison reviews.
const citusBenchCases = 5

// BenchmarkCitusVsSingleNode measures Remember, Recall and the nightly review of one team on the
// Citus cluster DENSEMEM_CITUS_URL names and on a single-node clone, as the runtime and reviewer
// roles (skipped without a cluster). The two targets are sub-benchmarks of one function, so
// they alternate, round after round (CITUS_BENCH_ROUNDS, default 3). Each sub-benchmark builds its
// own team with benchHistory facts first.
//
//	go test -run '^$' -bench BenchmarkCitusVsSingleNode .
func BenchmarkCitusVsSingleNode(b *testing.B) {
	cluster := testdb.Citus(b) // skips without a cluster
	targets := []struct {
		name string
		env  func(b *testing.B) *benchEnv
	}{
		{"single", func(b *testing.B) *benchEnv { return newBenchEnv(b, 0) }},
		{"cluster", func(b *testing.B) *benchEnv {
			// The tests read the tables by their plain names (a URL parameter pgx sends as a setting).
			url := cluster.Config().ConnString()
			if strings.Contains(url, "?") {
				url += "&search_path=densemem"
			} else {
				url += "?search_path=densemem"
			}
			be, pool := newTracedPool(b, url, 0)
			be.env = newEnvOnPool(b, pool)
			return be
		}},
	}
	// Rounds, not -count: -count repeats each sub-benchmark in a row, and the comparison wants the
	// two targets measured alternately under the same load.
	for round := range countFromEnv("CITUS_BENCH_ROUNDS", 3) {
		for _, op := range []string{"Remember", "Recall", "NightlyReview"} {
			for _, target := range targets {
				b.Run(fmt.Sprintf("%s/%s/round=%d", op, target.name, round+1), func(b *testing.B) {
					be := target.env(b)
					be.seedHistory(benchHistory)
					switch op {
					case "Remember":
						be.rememberFresh(be.A, -1)
						i := 0
						be.reset()
						for b.Loop() {
							be.rememberFresh(be.A, i)
							i++
						}
					case "Recall":
						q := "env-7 deploys from branch-7"
						be.recall(be.A, q, nil, nil)
						be.reset()
						for b.Loop() {
							if res := be.recall(be.A, q, nil, nil); len(res.Results) == 0 {
								b.Fatal("recall found nothing")
							}
						}
					case "NightlyReview":
						// Only the review is timed and counted: opening the cases is set-up.
						var cases, trips int64
						i := 0
						for b.Loop() {
							b.StopTimer()
							var last string
							for c := range citusBenchCases {
								last, _ = be.openEnvironmentCase(fmt.Sprintf("nightly-%d-%d", i, c), true)
							}
							be.advanceToReviewDue(last)
							before := be.trips.Load()
							b.StartTimer()
							rep := be.reviewTeamAs("bench")
							b.StopTimer()
							trips += be.trips.Load() - before
							cases += int64(rep.Resolved)
							if rep.Resolved != citusBenchCases || rep.Failed != 0 {
								b.Fatalf("report %+v, want %d resolved", rep, citusBenchCases)
							}
							i++
							b.StartTimer()
						}
						b.ReportMetric(float64(cases)/float64(b.N), "cases/op")
						b.ReportMetric(float64(trips)/float64(b.N), "roundtrips/op")
						return
					}
					be.report(b)
				})
			}
		}
	}
}
