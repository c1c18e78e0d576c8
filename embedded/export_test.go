//go:build unix

package embedded

// Abandon releases the data directory's lock and forgets the server without stopping it, as a host
// that crashed would, and returns the server's pid and a channel closed when the process has exited.
func Abandon(s *Server) (pid int, exited <-chan struct{}) {
	s.release()
	s.stopOnce.Do(func() {})
	return s.cmd.Process.Pid, s.exited
}

// PID is the server's process id.
func PID(s *Server) int { return s.cmd.Process.Pid }
