package pgserver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// capDACReadSearch is CAP_DAC_READ_SEARCH: search (and read) any directory.
const capDACReadSearch = 2

// procAttr is how initdb and the server are started: in a process group of their own (a terminal's
// Ctrl-C reaches the host, which stops the server through Stop), told to shut down fast when the
// host dies, and, when the host is root, as cred. When cred cannot search a directory above pgdata
// or the binaries (root's home is 0700), they keep CAP_DAC_READ_SEARCH so that they can reach the cluster; nothing
// else of root's privileges.
func procAttr(cred *credential, pgdata, bindir string) (*syscall.SysProcAttr, error) {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGINT}
	if cred == nil {
		return attr, nil
	}
	attr.Credential = &syscall.Credential{Uid: cred.uid, Gid: cred.gid, Groups: []uint32{}}
	blocked := unsearchable(filepath.Dir(pgdata), cred)
	if blocked == "" {
		blocked = unsearchable(bindir, cred)
	}
	if blocked == "" {
		return attr, nil
	}
	if !boundingHas(capDACReadSearch) {
		return nil, fmt.Errorf("embedded: the server runs as %s, which may not enter %s, and this process may not "+
			"grant CAP_DAC_READ_SEARCH: choose a data directory %s may reach (e.g. under /var/lib) or set "+
			"Options.ServerUser to a user who may", cred.name, blocked, cred.name)
	}
	attr.AmbientCaps = []uintptr{capDACReadSearch}
	return attr, nil
}

// unsearchable returns the first of dir and its parents that cred may not search, "" when none.
func unsearchable(dir string, cred *credential) string {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil {
			st, ok := fi.Sys().(*syscall.Stat_t)
			perm := fi.Mode().Perm()
			var may bool
			switch {
			case !ok:
				may = true
			case st.Uid == cred.uid:
				may = perm&0o100 != 0
			case st.Gid == cred.gid:
				may = perm&0o010 != 0
			default:
				may = perm&0o001 != 0
			}
			if !may {
				return d
			}
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// boundingHas reports whether capability c is in this process's bounding set.
func boundingHas(c uint) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<c) != 0
		}
	}
	return false
}

// serverOf identifies the process pid: a postgres whose working directory is pgdata (the postmaster
// changes into its data directory) is this cluster's server.
func serverOf(pid int, pgdata string) processKind {
	proc := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(proc + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return processGone
	}
	if err == nil {
		// pid (comm) STATE ...: a zombie has exited.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return processGone
		}
	}
	exe, exeErr := os.Readlink(proc + "/exe")
	cwd, cwdErr := os.Readlink(proc + "/cwd")
	if exeErr != nil || cwdErr != nil {
		if errors.Is(exeErr, os.ErrNotExist) || errors.Is(cwdErr, os.ErrNotExist) {
			return processGone
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return processGone
		} else if errors.Is(err, syscall.EPERM) && os.Geteuid() != 0 {
			// Another user's process; the server of a non-root host runs as the host's user.
			return processOther
		}
		return processUnknown
	}
	if filepath.Base(strings.TrimSuffix(exe, " (deleted)")) != "postgres" {
		return processOther
	}
	want, err := filepath.EvalSymlinks(pgdata)
	if err != nil {
		want = pgdata
	}
	if cwd == want || cwd == pgdata {
		return processOurs
	}
	return processOther
}
