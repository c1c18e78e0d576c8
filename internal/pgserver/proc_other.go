//go:build unix && !linux

package pgserver

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// procAttr is how initdb and the server are started: in a process group of their own (a terminal's
// Ctrl-C reaches the host, which stops the server through Stop), and, when the host is root, as cred.
func procAttr(cred *credential, _, _ string) (*syscall.SysProcAttr, error) {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if cred != nil {
		attr.Credential = &syscall.Credential{Uid: cred.uid, Gid: cred.gid, Groups: []uint32{}}
	}
	return attr, nil
}

// serverOf identifies the process pid by its command line: a postgres started with -D pgdata (as
// Start starts it) is this cluster's server.
func serverOf(pid int, pgdata string) processKind {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return processGone
	}
	out, err := exec.Command("ps", "-ww", "-o", "command=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return processGone // ps exits 1 when no such process
		}
		return processUnknown
	}
	cmd := strings.TrimSpace(string(out))
	switch {
	case cmd == "":
		return processGone
	case !strings.Contains(cmd, "postgres"):
		return processOther
	case strings.Contains(cmd, "-D "+pgdata+" ") || strings.HasSuffix(cmd, "-D "+pgdata):
		return processOurs
	case strings.Contains(cmd, "-D "):
		return processOther
	}
	return processUnknown
}
