package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MinVersion is the oldest PostgreSQL major version the library supports.
const MinVersion = 15

// binaries are the PostgreSQL programs Start runs.
type binaries struct {
	dir, initdb, postgres string
	major                 int
}

// versionPattern finds the major version in "postgres (PostgreSQL) 15.20 (Debian ...)".
var versionPattern = regexp.MustCompile(`\(PostgreSQL\) (\d+)`)

// findBinaries returns the binaries in dir when set, else from $DENSEMEM_POSTGRES_BIN, else the
// newest usable installation found through pg_config or in the usual directories. want, when not
// zero, is the major version an existing cluster needs.
func findBinaries(ctx context.Context, o Options, want int) (binaries, error) {
	configured, source := o.BinDir, "Options.BinDir"
	if configured == "" {
		configured, source = os.Getenv(EnvBinDir), "$"+EnvBinDir
	}
	if configured != "" {
		b, err := probe(configured)
		if err == nil && want != 0 && b.major != want {
			err = fmt.Errorf("the data directory's cluster is PostgreSQL %d, these binaries are %d", want, b.major)
		}
		if err != nil {
			return binaries{}, fmt.Errorf("embedded: %s=%s: %w", source, configured, err)
		}
		return b, nil
	}
	var found []binaries
	var tried []string
	for _, d := range candidateDirs() {
		b, err := probe(d)
		if err != nil {
			continue
		}
		tried = append(tried, fmt.Sprintf("%s (%d)", d, b.major))
		if b.major >= MinVersion && (want == 0 || b.major == want) {
			found = append(found, b)
		}
	}
	if len(found) > 0 {
		sort.SliceStable(found, func(i, j int) bool { return found[i].major > found[j].major })
		return found[0], nil
	}
	downloadErr := errors.New("forbidden by Options.NoDownload or $" + EnvNoDownload)
	if !o.NoDownload && os.Getenv(EnvNoDownload) == "" {
		if want != 0 && want != downloadMajor() {
			downloadErr = fmt.Errorf("the download is PostgreSQL %d", downloadMajor())
		} else {
			b, err := download(ctx, o)
			if err == nil {
				return b, nil
			}
			downloadErr = err
		}
	}
	need := fmt.Sprintf("PostgreSQL %d or later", MinVersion)
	if want != 0 {
		need = fmt.Sprintf("PostgreSQL %d (the data directory's cluster was made by it)", want)
	}
	seen := "none found"
	if len(tried) > 0 {
		seen = "found only " + strings.Join(tried, ", ")
	}
	return binaries{}, fmt.Errorf("embedded: no %s binaries (initdb, postgres) on this machine (%s): install "+
		"PostgreSQL (apt-get install postgresql, dnf install postgresql-server, brew install postgresql@16) "+
		"or set %s (or Options.BinDir) to the directory holding initdb and postgres; "+
		"or set DENSEMEM_DATABASE_URL to an external server instead (download of PostgreSQL %s: %v)",
		need, seen, EnvBinDir, DownloadVersion, downloadErr)
}

// downloadMajor is DownloadVersion's major version.
func downloadMajor() int {
	major, _, _ := strings.Cut(DownloadVersion, ".")
	n, _ := strconv.Atoi(major)
	return n
}

// candidateDirs lists where PostgreSQL binaries usually are: pg_config's bindir first, then the
// package managers' directories, then the PATH's directory of initdb.
func candidateDirs() []string {
	var dirs []string
	for _, pgConfig := range []string{"pg_config", "/usr/bin/pg_config"} {
		if out, err := commandOutput(pgConfig, "--bindir"); err == nil {
			dirs = append(dirs, strings.TrimSpace(out))
		}
	}
	for _, pattern := range []string{
		"/usr/lib/postgresql/*/bin",          // Debian, Ubuntu
		"/usr/pgsql-*/bin",                   // RHEL, Fedora (PGDG)
		"/usr/local/pgsql/bin",               // built from source
		"/opt/homebrew/opt/postgresql@*/bin", // Homebrew, Apple silicon
		"/usr/local/opt/postgresql@*/bin",    // Homebrew, Intel
		"/opt/homebrew/bin",
		"/usr/local/bin",
		"/usr/libexec/postgresql*", // Fedora's own packages
	} {
		matches, _ := filepath.Glob(pattern)
		sort.Sort(sort.Reverse(sort.StringSlice(matches)))
		dirs = append(dirs, matches...)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range dirs {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			d = real
		}
		if d != "" && !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// probe checks that dir holds initdb and postgres and returns their major version.
func probe(dir string) (binaries, error) {
	exe := ""
	if runtime.GOOS == "windows" {
		exe = ".exe"
	}
	b := binaries{dir: dir, initdb: filepath.Join(dir, "initdb"+exe), postgres: filepath.Join(dir, "postgres"+exe)}
	for _, p := range []string{b.initdb, b.postgres} {
		fi, err := os.Stat(p)
		if err != nil {
			return binaries{}, fmt.Errorf("no %s", filepath.Base(p))
		}
		if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return binaries{}, fmt.Errorf("%s is not executable", p)
		}
	}
	out, err := commandOutput(b.postgres, "--version")
	if err != nil {
		return binaries{}, fmt.Errorf("%s --version: %w", b.postgres, err)
	}
	m := versionPattern.FindStringSubmatch(out)
	if m == nil {
		return binaries{}, fmt.Errorf("%s --version printed %q", b.postgres, strings.TrimSpace(out))
	}
	b.major, _ = strconv.Atoi(m[1])
	if b.major < MinVersion {
		return b, fmt.Errorf("PostgreSQL %d is older than %d", b.major, MinVersion)
	}
	return b, nil
}

// commandOutput runs name with args for at most 10 seconds and returns its standard output.
func commandOutput(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	return string(out), err
}
