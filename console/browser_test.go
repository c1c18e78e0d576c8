package console_test

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// screenshots makes TestBrowser also write a PNG of each main page into docs/console/:
//
//	go test ./console -run TestBrowser -screenshots
var screenshots = flag.Bool("screenshots", false, "write PNG screenshots of the console's main pages into docs/console/")

// envSkipBrowser, set to 1, skips the real-browser test where no Chromium can be installed.
const envSkipBrowser = "DENSEMEM_SKIP_BROWSER"

// chromium returns the headless browser to drive: DENSEMEM_CHROMIUM, else chromium on the PATH.
// Without one the test fails, naming the fix, unless DENSEMEM_SKIP_BROWSER=1 says to skip it.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DENSEMEM_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(envSkipBrowser) == "1" {
		t.Skip("no Chromium, and " + envSkipBrowser + "=1: the real-browser test is skipped")
	}
	t.Fatal("the console's real-browser test needs headless Chromium: apt-get install -y chromium " +
		"(or DENSEMEM_CHROMIUM=/path/to/chromium); set " + envSkipBrowser + "=1 to skip it explicitly")
	return ""
}

// browser starts headless Chromium for t and returns a tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	dir, err := os.MkdirTemp("", "densemem-chromium")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.UserDataDir(dir), chromedp.WindowSize(1280, 900), chromedp.Flag("disable-dev-shm-usage", true))
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		cancel()
		_ = os.RemoveAll(dir) // best effort: Chromium's helpers may still be writing
	})
	return tab
}

// shown is one page as the browser drew it: its main text, the area of each picture, and the
// header's background colour (the stylesheet applied under the Content-Security-Policy).
type shown struct {
	Text     string    `json:"text"`
	Pictures []float64 `json:"pictures"`
	Header   string    `json:"header"`
}

const measure = `({text: document.querySelector('main').innerText,
	pictures: Array.from(document.querySelectorAll('svg.picture')).map(s => { const r = s.getBoundingClientRect(); return r.width * r.height; }),
	header: getComputedStyle(document.querySelector('header')).backgroundColor})`

// TestBrowser signs in through the form in headless Chromium and reads every main page of the
// seeded team: its content, every picture drawn with a non-zero box, the stylesheet applied.
func TestBrowser(t *testing.T) {
	t.Parallel()
	tab := browser(t) // first: without Chromium, fail (or skip) before seeding
	s := seed(t)
	if err := chromedp.Do(tab, chromedp.Navigate(s.server.URL+"/cases"), chromedp.SendKeys(chromedp.ID("token"), hostToken),
		chromedp.Submit(chromedp.ID("token")), chromedp.WaitVisible(chromedp.CSS("article.case"))); err != nil {
		t.Fatalf("signing in: %v", err)
	}
	for _, pg := range []struct {
		name, path string
		pictures   int
		wants      []string
	}{
		{"cases", "/cases", 1, []string{s.overdue, "Policy in force", "overdue"}},
		{"resolved", "/cases?status=resolved", 1, []string{s.resolved, "release (preferred)"}},
		{"case", "/cases/" + s.resolved, 1, []string{"Event history", "system_conflict_reviewer", "post_ttl_majority_floor_met"}},
		{"review", "/review", 0, []string{"relationship_conflict", string(s.held), "Choices and their impact"}},
		{"trace", "/relationships/" + string(s.bobRelease), 1, []string{"Since 2026-01-01 the production environment deploys from release.", "corrects", "entailed"}},
		{"timeline", "/relationships/" + string(s.aliceMain) + "/timeline", 1, []string{"superseded", "carol: production deploys_from release"}},
		{"split", "/relationships/" + string(s.splitInto), 1, []string{"split", string(s.splitFrom)}},
		{"nightly", "/nightly", 0, []string{s.resolved, s.overdue, "Run of 2026-01-13"}},
		{"search", "/search?q=production+deploys&valid_at=2025-09-01", 0, []string{"main"}},
	} {
		if err := chromedp.Do(tab, chromedp.Navigate(s.server.URL+pg.path), chromedp.WaitVisible(chromedp.CSS("main"))); err != nil {
			t.Fatalf("%s: %v", pg.name, err)
		}
		got, err := chromedp.Run(tab, chromedp.Evaluate[shown](measure))
		if err != nil {
			t.Fatalf("%s: %v", pg.name, err)
		}
		for _, w := range pg.wants {
			if !strings.Contains(got.Text, w) {
				t.Errorf("%s: the page lacks %q", pg.name, w)
			}
		}
		if len(got.Pictures) != pg.pictures {
			t.Errorf("%s: %d pictures, want %d", pg.name, len(got.Pictures), pg.pictures)
		}
		for i, area := range got.Pictures {
			if area <= 0 {
				t.Errorf("%s: picture %d has an empty box", pg.name, i)
			}
		}
		if got.Header != "rgb(31, 63, 110)" {
			t.Errorf("%s: header background %q: the stylesheet did not apply", pg.name, got.Header)
		}
		if *screenshots {
			shoot(t, tab, pg.name)
		}
	}
}

// shoot writes the tab's whole page as docs/console/<name>.png.
func shoot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot of %s: %v", name, err)
	}
	dir := filepath.Join("..", "docs", "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
