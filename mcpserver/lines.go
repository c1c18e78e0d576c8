package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of a LineTransport's messages.
const (
	// DefaultMaxMessageBytes bounds one line: a remember of 20 evidence items of 32 KiB, escaped,
	// fits with room to spare.
	DefaultMaxMessageBytes = 8 << 20
	// DefaultMaxDepth bounds the nesting of one message's arrays and objects; the deepest tool input
	// nests about eight levels.
	DefaultMaxDepth = 64
)

// LineTransport is an mcp.Transport over newline-delimited JSON-RPC (the MCP stdio framing) that
// answers every line it cannot pass on with a JSON-RPC error and goes on reading: a line that is not
// JSON gets a parse error (-32700); a line longer than MaxMessageBytes, nested deeper than MaxDepth,
// a batch, a value that is not an object, a "jsonrpc" other than "2.0", an id that is neither a
// string nor an integer, or a message that is neither a request, a notification nor a response gets
// an invalid-request error (-32600), with the request's id when it could be read and null otherwise.
// Only end of input or a read error ends the connection.
type LineTransport struct {
	// Reader and Writer carry the messages (os.Stdin and os.Stdout for ServeStdio).
	Reader io.Reader
	Writer io.Writer
	// MaxMessageBytes bounds one line (default DefaultMaxMessageBytes); the rest of a longer line is
	// read and discarded without being kept.
	MaxMessageBytes int
	// MaxDepth bounds the nesting of one message (default DefaultMaxDepth).
	MaxDepth int
}

// Connect implements mcp.Transport: it starts reading lines.
func (t *LineTransport) Connect(context.Context) (mcp.Connection, error) {
	if t.Reader == nil || t.Writer == nil {
		return nil, errors.New("mcpserver: LineTransport needs a Reader and a Writer")
	}
	c := &lineConn{w: t.Writer, incoming: make(chan lineRead), closed: make(chan struct{}),
		max: t.MaxMessageBytes, depth: t.MaxDepth}
	if c.max <= 0 {
		c.max = DefaultMaxMessageBytes
	}
	if c.depth <= 0 {
		c.depth = DefaultMaxDepth
	}
	go c.readLoop(bufio.NewReaderSize(t.Reader, 64<<10))
	return c, nil
}

// lineRead is one message passed on, or the error that ended the input.
type lineRead struct {
	msg jsonrpc.Message
	err error
}

// lineConn is one LineTransport connection.
type lineConn struct {
	w          io.Writer
	wmu        sync.Mutex
	incoming   chan lineRead
	closed     chan struct{}
	closeOnce  sync.Once
	max, depth int
}

// readLoop reads lines until the input ends, passing valid messages on and answering the others.
func (c *lineConn) readLoop(r *bufio.Reader) {
	for {
		line, oversized, err := readLine(r, c.max)
		if len(bytes.TrimSpace(line)) > 0 || oversized {
			var msg jsonrpc.Message
			var reply []byte
			if oversized {
				reply = errorReply(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message longer than %d bytes", c.max))
			} else {
				msg, reply = c.check(line)
			}
			if reply != nil {
				if werr := c.write(reply); werr != nil {
					c.deliver(lineRead{err: werr})
					return
				}
			} else if !c.deliver(lineRead{msg: msg}) {
				return
			}
		}
		if err != nil {
			c.deliver(lineRead{err: err})
			return
		}
	}
}

// deliver hands one read to Read; false when the connection was closed.
func (c *lineConn) deliver(r lineRead) bool {
	select {
	case c.incoming <- r:
		return true
	case <-c.closed:
		return false
	}
}

// readLine reads one line without its end, keeping at most max bytes: a longer line is read to its
// end and reported as oversized. err is the reader's (io.EOF at the end of input).
func readLine(r *bufio.Reader, max int) (line []byte, oversized bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !oversized {
			if len(line)+len(chunk) > max+2 { // a line end of \r\n is not part of the message
				oversized, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimRight(line, "\r\n")
		if !oversized && len(line) > max {
			oversized, line = true, nil
		}
		return line, oversized, err
	}
}

// check validates one line: the message to pass on, or the error reply to send instead.
func (c *lineConn) check(line []byte) (jsonrpc.Message, []byte) {
	line = bytes.TrimSpace(line)
	if depth(line) > c.depth {
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message nested deeper than %d levels", c.depth))
	}
	if !json.Valid(line) {
		return nil, errorReply(nil, jsonrpc.CodeParseError, "parse error: the line is not valid JSON")
	}
	switch line[0] {
	case '{':
	case '[':
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported: send one message per line")
	default:
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, "a JSON-RPC message must be a JSON object")
	}
	var env struct {
		JSONRPC *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, "not a JSON-RPC message: "+err.Error())
	}
	id, idOK := validID(env.ID)
	switch {
	case !idOK:
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, "id must be a string or an integer")
	case env.JSONRPC == nil || *env.JSONRPC != "2.0":
		return nil, errorReply(id, jsonrpc.CodeInvalidRequest, `"jsonrpc" must be "2.0"`)
	case env.Method != nil && (len(env.Method) == 0 || env.Method[0] != '"'):
		return nil, errorReply(id, jsonrpc.CodeInvalidRequest, `"method" must be a string`)
	case env.Method == nil && (id == nil || (env.Result == nil && env.Error == nil)):
		return nil, errorReply(id, jsonrpc.CodeInvalidRequest, `a message needs a "method" (a request or notification) or an id with a "result" or "error" (a response)`)
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, errorReply(id, jsonrpc.CodeInvalidRequest, "invalid JSON-RPC message: "+err.Error())
	}
	return msg, nil
}

// validID reports whether raw, a message's id, is absent, a string or an integer that fits in 64
// bits, and returns it to echo in a reply (nil when absent).
func validID(raw json.RawMessage) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, true
	}
	switch raw[0] {
	case '"':
		return raw, true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if bytes.ContainsAny(raw, ".eE") {
			return nil, false
		}
		n, ok := new(big.Int).SetString(string(raw), 10)
		if !ok || !n.IsInt64() {
			return nil, false
		}
		return raw, true
	}
	return nil, false
}

// depth returns the deepest nesting of arrays and objects in a JSON text, without recursion (a string
// is skipped with its escapes).
func depth(b []byte) int {
	d, deepest, inString, escaped := 0, 0, false, false
	for _, ch := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case ch == '\\':
				escaped = true
			case ch == '"':
				inString = false
			}
		case ch == '"':
			inString = true
		case ch == '[' || ch == '{':
			d++
			deepest = max(deepest, d)
		case ch == ']' || ch == '}':
			d--
		}
	}
	return deepest
}

// errorReply is a JSON-RPC error response line for id (null when nil).
func errorReply(id json.RawMessage, code int64, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	return b
}

// Read implements mcp.Connection: the next valid message.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case r := <-c.incoming:
		return r.msg, r.err
	}
}

// Write implements mcp.Connection: one message on one line.
func (c *lineConn) Write(_ context.Context, msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.write(b)
}

// write writes one line, whole, between other writers' lines. It writes after Close too: the
// answers to requests read before the input ended still reach the client.
func (c *lineConn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(b, '\n'))
	return err
}

// Close implements mcp.Connection. The reader is left to end with its input.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements mcp.Connection: a line connection has no session ID.
func (c *lineConn) SessionID() string { return "" }
