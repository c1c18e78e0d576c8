package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/densemem/densemem/mcpserver"
)

// rawPeer speaks newline-delimited JSON-RPC to a server on a LineTransport through pipes.
type rawPeer struct {
	t   *testing.T
	in  *io.PipeWriter
	out *bufio.Reader
}

func (p *rawPeer) send(line []byte) {
	p.t.Helper()
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		p.t.Fatal(err)
	}
}

// reply is one JSON-RPC response as the peer reads it.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (p *rawPeer) recv() reply {
	p.t.Helper()
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		p.t.Fatalf("read a reply: %v", err)
	}
	var r reply
	if err := json.Unmarshal(line, &r); err != nil {
		p.t.Fatalf("reply %q: %v", line, err)
	}
	return r
}

// Every malformed, oversized or unknown message of the stdio framing gets a JSON-RPC error reply,
// and the server goes on: the valid request after it is answered.
func TestStdioAnswersMalformedMessagesAndGoesOn(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() {
		err := mcpserver.Serve(ctx, f.client, f.A, &mcpserver.LineTransport{Reader: inR, Writer: outW, MaxMessageBytes: 1 << 20})
		// A server that stops ends the peer's reading at once: the test fails, it does not hang.
		_ = outW.CloseWithError(fmt.Errorf("the server stopped: %v", err))
		_ = inR.CloseWithError(fmt.Errorf("the server stopped: %v", err))
		served <- err
	}()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		_ = outR.Close()
		<-served
	})
	p := &rawPeer{t: t, in: inW, out: bufio.NewReader(outR)}
	p.send([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`))
	if r := p.recv(); r.Error != nil || r.Result == nil {
		t.Fatalf("initialize: %+v", r)
	}
	p.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))

	deep := bytes.Repeat([]byte("["), 100_000)
	deep = append(deep, bytes.Repeat([]byte("]"), 100_000)...)
	huge := []byte(`{"jsonrpc":"2.0","id":99,"method":"ping","params":{"pad":"` + strings.Repeat("x", 64<<20) + `"}}`)
	for i, tc := range []struct {
		name   string
		line   []byte
		code   int
		id     string
		saying string
	}{
		{"a syntax error", []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"`), -32700, "null", "not valid JSON"},
		{"a line that is not JSON", []byte(`hello, server`), -32700, "null", "not valid JSON"},
		{"a batch", []byte(`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`), -32600, "null", "batches are not supported"},
		{"jsonrpc 1.0", []byte(`{"jsonrpc":"1.0","id":3,"method":"ping"}`), -32600, "3", `"jsonrpc" must be "2.0"`},
		{"no jsonrpc", []byte(`{"id":"four","method":"ping"}`), -32600, `"four"`, `"jsonrpc" must be "2.0"`},
		{"an object id", []byte(`{"jsonrpc":"2.0","id":{"n":5},"method":"ping"}`), -32600, "null", "id must be a string or an integer"},
		{"an id of 1e400", []byte(`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`), -32600, "null", "id must be a string or an integer"},
		{"a fractional id", []byte(`{"jsonrpc":"2.0","id":6.5,"method":"ping"}`), -32600, "null", "id must be a string or an integer"},
		{"a number method", []byte(`{"jsonrpc":"2.0","id":7,"method":7}`), -32600, "7", `"method" must be a string`},
		{"neither request nor response", []byte(`{"jsonrpc":"2.0","id":8}`), -32600, "8", `needs a "method"`},
		{"100k-deep nesting", deep, -32600, "null", "nested deeper than"},
		{"a 64 MiB message", huge, -32600, "null", "longer than 1048576 bytes"},
		{"a JSON string", []byte(`"ping"`), -32600, "null", "must be a JSON object"},
		{"an unknown method", []byte(`{"jsonrpc":"2.0","id":10,"method":"tools/frobnicate"}`), -32601, "10", ""},
	} {
		p.send(tc.line)
		r := p.recv()
		if r.Error == nil || r.Error.Code != tc.code || string(r.ID) != tc.id || !strings.Contains(r.Error.Message, tc.saying) {
			t.Errorf("%s: reply id %s, error %+v; want id %s, code %d saying %q", tc.name, r.ID, r.Error, tc.id, tc.code, tc.saying)
		}
		id := 1000 + i
		p.send(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, id))
		if r := p.recv(); r.Error != nil || string(r.ID) != fmt.Sprint(id) || !bytes.Contains(r.Result, []byte(`"remember"`)) {
			t.Fatalf("after %s: tools/list answered %+v; want the tools", tc.name, r)
		}
	}
}
