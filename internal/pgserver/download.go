package pgserver

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/xi2/xz"
)

// Downloaded binaries: the builds of the zonky embedded-postgres-binaries project on Maven Central,
// the archives embedded-postgres (github.com/fergusstrange/embedded-postgres) downloads.
const (
	// DownloadVersion is the PostgreSQL version downloaded when none is installed.
	DownloadVersion = "16.9.0"
	// DefaultRepository is where the binaries are downloaded from.
	DefaultRepository = "https://repo1.maven.org/maven2"
	// EnvNoDownload, set to any value, forbids the download (as Options.NoDownload does).
	EnvNoDownload = "DENSEMEM_POSTGRES_NO_DOWNLOAD"

	// maxArchive bounds a download (the archives are 10 to 30 MB).
	maxArchive = 200 << 20
)

// platform names this machine as the binaries' artifacts do, e.g. "linux-amd64", "darwin-arm64v8",
// "linux-arm64v8-alpine".
func platform() (string, error) {
	arch := runtime.GOARCH
	switch runtime.GOOS + "/" + arch {
	case "linux/amd64", "linux/386", "linux/ppc64le", "darwin/amd64", "windows/amd64":
	case "linux/arm64", "darwin/arm64":
		arch = "arm64v8"
	case "linux/arm":
		arch = "arm32v7"
	default:
		return "", fmt.Errorf("no downloadable PostgreSQL for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if runtime.GOOS == "linux" {
		if _, err := os.Stat("/etc/alpine-release"); err == nil {
			arch += "-alpine"
		}
	}
	return runtime.GOOS + "-" + arch, nil
}

// cacheDir is where downloaded binaries are kept: Options.CacheDir, else densemem/postgres in the
// user's cache directory.
func cacheDir(o Options) (string, error) {
	if o.CacheDir != "" {
		return filepath.Abs(o.CacheDir)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "densemem", "postgres"), nil
}

// download returns the downloaded binaries of DownloadVersion for this machine, fetching the archive
// and its SHA-256 on first use and unpacking it into the cache. A missing or mismatching checksum
// is an error: nothing unverified is unpacked.
func download(ctx context.Context, o Options) (binaries, error) {
	plat, err := platform()
	if err != nil {
		return binaries{}, err
	}
	cache, err := cacheDir(o)
	if err != nil {
		return binaries{}, fmt.Errorf("no cache directory: %w", err)
	}
	dest := filepath.Join(cache, DownloadVersion+"-"+plat)
	if b, err := probe(filepath.Join(dest, "bin")); err == nil {
		return b, nil
	}
	repo := o.Repository
	if repo == "" {
		repo = DefaultRepository
	}
	artifact := "embedded-postgres-binaries-" + plat
	url := fmt.Sprintf("%s/io/zonky/test/postgres/%s/%s/%s-%s.jar", strings.TrimSuffix(repo, "/"), artifact, DownloadVersion, artifact, DownloadVersion)
	sum, err := fetch(ctx, url+".sha256", 1<<10, nil)
	if err != nil {
		return binaries{}, fmt.Errorf("checksum: %w", err)
	}
	want := strings.TrimSpace(string(sum))
	if len(want) != 64 {
		return binaries{}, fmt.Errorf("checksum %s: %q is not a SHA-256", url+".sha256", want)
	}
	fmt.Fprintf(o.progress(), "embedded: downloading PostgreSQL %s for %s (about 15 MB, once) from %s\n", DownloadVersion, plat, url)
	jar, err := fetch(ctx, url, maxArchive, o.progress())
	if err != nil {
		return binaries{}, err
	}
	got := sha256.Sum256(jar)
	if hex.EncodeToString(got[:]) != strings.ToLower(want) {
		return binaries{}, fmt.Errorf("%s: SHA-256 %x, want %s: refusing it", url, got, want)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return binaries{}, err
	}
	tmp, err := os.MkdirTemp(cache, ".unpack-")
	if err != nil {
		return binaries{}, err
	}
	defer os.RemoveAll(tmp)
	if err := unpackJar(jar, tmp); err != nil {
		return binaries{}, fmt.Errorf("unpack %s: %w", url, err)
	}
	// Readable and executable by the unprivileged server user when the host is root.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return binaries{}, err
	}
	if err := os.Rename(tmp, dest); err != nil && !errors.Is(err, os.ErrExist) {
		if _, statErr := os.Stat(filepath.Join(dest, "bin")); statErr != nil {
			return binaries{}, err
		}
		// Unpacked meanwhile by another process.
	}
	return probe(filepath.Join(dest, "bin"))
}

// progress is where download progress goes: Options.Log when set, else standard error when it is a
// terminal, else nowhere.
func (o Options) progress() io.Writer {
	if o.Log != io.Discard {
		return o.Log
	}
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		return os.Stderr
	}
	return io.Discard
}

// fetch GETs url, at most limit bytes, reporting every tenth of the way to progress (nil: silent).
func fetch(ctx context.Context, url string, limit int64, progress io.Writer) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than %d", url, resp.ContentLength, limit)
	}
	var buf bytes.Buffer
	body := io.LimitReader(resp.Body, limit+1)
	chunk := make([]byte, 64<<10)
	shown := 0
	for {
		n, err := body.Read(chunk)
		buf.Write(chunk[:n])
		if progress != nil && resp.ContentLength > 0 {
			if tenth := int(int64(buf.Len()) * 10 / resp.ContentLength); tenth > shown {
				shown = tenth
				fmt.Fprintf(progress, "embedded: downloaded %d%%\n", tenth*10)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", url, err)
		}
	}
	if int64(buf.Len()) > limit {
		return nil, fmt.Errorf("%s: more than %d bytes", url, limit)
	}
	return buf.Bytes(), nil
}

// unpackJar unpacks the .txz archive the jar holds into dir.
func unpackJar(jar []byte, dir string) error {
	zr, err := zip.NewReader(bytes.NewReader(jar), int64(len(jar)))
	if err != nil {
		return err
	}
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".txz") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return err
		}
		defer rc.Close()
		xr, err := xz.NewReader(rc, 0)
		if err != nil {
			return err
		}
		return untar(tar.NewReader(xr), dir)
	}
	return errors.New("no .txz archive in the jar")
}

// untar writes the archive's directories, files and symbolic links under dir, refusing any that
// would land outside it.
func untar(tr *tar.Reader, dir string) error {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if name == "." {
			continue
		}
		if !filepath.IsLocal(name) {
			return fmt.Errorf("entry %q leaves the directory", h.Name)
		}
		path := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, os.FileMode(h.Mode).Perm()|0o444)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if filepath.IsAbs(h.Linkname) || !filepath.IsLocal(filepath.Join(filepath.Dir(name), h.Linkname)) {
				return fmt.Errorf("link %q -> %q leaves the directory", h.Name, h.Linkname)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, path); err != nil {
				return err
			}
		}
	}
}
