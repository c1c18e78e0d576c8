//go:build unix

package pgserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repository serves jar (a fixture in testdata) as every artifact, with sum as its published
// SHA-256 ("" for the jar's own).
func repository(t *testing.T, jar, sum string) *httptest.Server {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", jar))
	if err != nil {
		t.Fatal(err)
	}
	if sum == "" {
		h := sha256.Sum256(body)
		sum = hex.EncodeToString(h[:])
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, ".jar.sha256"):
			_, _ = w.Write([]byte(sum + "\n"))
		case strings.HasSuffix(r.URL.Path, ".jar"):
			_, _ = w.Write(body)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestDownload_VerifiesAndUnpacksIntoTheCache downloads a fixture archive (fake initdb and postgres
// scripts, a library and its link) and finds the binaries in the cache; a second call uses the cache.
func TestDownload_VerifiesAndUnpacksIntoTheCache(t *testing.T) {
	t.Parallel()
	if _, err := platform(); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	o := (&Options{Repository: repository(t, "fake-binaries.jar", "").URL, CacheDir: cache}).orDefault()
	b, err := download(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if b.major != 16 || !strings.HasPrefix(b.dir, cache) {
		t.Errorf("binaries %+v, want version 16 in %s", b, cache)
	}
	if target, err := os.Readlink(filepath.Join(filepath.Dir(b.dir), "lib", "libpq.so.5")); err != nil || target != "libpq.so.5.16" {
		t.Errorf("the library's link: %q, %v", target, err)
	}
	o.Repository = "http://127.0.0.1:1" // nothing there: the second call must not download
	if _, err := download(context.Background(), o); err != nil {
		t.Errorf("the cached binaries were not used: %v", err)
	}
}

// TestDownload_RefusesABadChecksum checks that an archive whose SHA-256 differs from the published
// one is refused and nothing is unpacked.
func TestDownload_RefusesABadChecksum(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	o := (&Options{Repository: repository(t, "fake-binaries.jar", strings.Repeat("0", 64)).URL, CacheDir: cache}).orDefault()
	_, err := download(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("download with a wrong checksum: %v", err)
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("the cache holds %v after a refused download", entries)
	}
}

// TestDownload_RefusesAnEscapingLink checks that an archive with a link out of its directory is
// refused.
func TestDownload_RefusesAnEscapingLink(t *testing.T) {
	t.Parallel()
	o := (&Options{Repository: repository(t, "escaping-link.jar", "").URL, CacheDir: t.TempDir()}).orDefault()
	if _, err := download(context.Background(), o); err == nil || !strings.Contains(err.Error(), "leaves the directory") {
		t.Fatalf("download of an archive with /etc linked in: %v", err)
	}
}

// TestFindBinaries_NoneAndNoDownload checks the error with no binaries and the download failing: it
// names both ways to provide them and why the download failed.
func TestFindBinaries_NoneAndNoDownload(t *testing.T) {
	t.Parallel()
	o := (&Options{Repository: "http://127.0.0.1:1", CacheDir: t.TempDir()}).orDefault()
	_, err := findBinaries(context.Background(), o, 14) // a cluster of 14: nothing installed fits
	if err == nil {
		t.Fatal("found binaries for PostgreSQL 14")
	}
	for _, want := range []string{EnvBinDir, "install", "download of PostgreSQL", "DENSEMEM_DATABASE_URL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err)
		}
	}
}
