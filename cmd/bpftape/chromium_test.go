//go:build interop

package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// cdp drives a headless Chromium through the DevTools protocol over
// --remote-debugging-pipe (JSON messages ended by NUL on fds 3 and 4), which
// needs no WebSocket client and opens no port.
type cdp struct {
	t      *testing.T
	cmd    *exec.Cmd
	w      io.WriteCloser
	msgs   chan cdpMsg
	id     int
	events []cdpMsg
}

type cdpMsg struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// chromiumPath finds Debian's chromium (or another Chromium build).
func chromiumPath() (string, error) {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium on PATH")
}

func startChromium(t *testing.T) *cdp {
	t.Helper()
	path, err := chromiumPath()
	if err != nil {
		t.Skip("chromium is not installed (apt-get install chromium): cannot check the report in a browser")
	}
	toChrome, ours, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	theirs, fromChrome, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--hide-scrollbars", "--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, fromChrome} // fds 3 and 4
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	toChrome.Close()
	fromChrome.Close()
	c := &cdp{t: t, cmd: cmd, w: ours, msgs: make(chan cdpMsg, 256)}
	go func() {
		r := bufio.NewReaderSize(theirs, 1<<20)
		for {
			b, err := r.ReadBytes(0)
			if err != nil {
				close(c.msgs)
				return
			}
			var m cdpMsg
			if json.Unmarshal(b[:len(b)-1], &m) == nil {
				c.msgs <- m
			}
		}
	}()
	t.Cleanup(func() {
		c.send("", "Browser.close", nil)
		ours.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return c
}

func (c *cdp) send(session, method string, params any) int {
	c.id++
	msg := map[string]any{"id": c.id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	b, _ := json.Marshal(msg)
	c.w.Write(append(b, 0))
	return c.id
}

// call sends a command and waits for its result, keeping the events that
// arrive meanwhile.
func (c *cdp) call(session, method string, params any, result any) {
	c.t.Helper()
	id := c.send(session, method, params)
	timeout := time.After(60 * time.Second)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				c.t.Fatalf("%s: chromium went away", method)
			}
			if m.ID != id {
				if m.Method != "" {
					c.events = append(c.events, m)
				}
				continue
			}
			if m.Error != nil {
				c.t.Fatalf("%s: %s", method, m.Error.Message)
			}
			if result != nil {
				if err := json.Unmarshal(m.Result, result); err != nil {
					c.t.Fatalf("%s: %v", method, err)
				}
			}
			return
		case <-timeout:
			c.t.Fatalf("%s: no answer from chromium in 60s", method)
		}
	}
}

// waitEvent waits for an event of the session (already seen ones count).
func (c *cdp) waitEvent(session, method string) {
	c.t.Helper()
	for _, e := range c.events {
		if e.Method == method && e.SessionID == session {
			return
		}
	}
	timeout := time.After(60 * time.Second)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				c.t.Fatalf("waiting for %s: chromium went away", method)
			}
			if m.Method != "" {
				c.events = append(c.events, m)
			}
			if m.Method == method && m.SessionID == session {
				return
			}
		case <-timeout:
			c.t.Fatalf("no %s from chromium in 60s", method)
		}
	}
}

// page is one tab attached in flat mode, with console, log and network
// events enabled before it loads anything.
type page struct {
	c       *cdp
	session string
}

func (c *cdp) newPage(width, height int) *page {
	var target struct {
		TargetID string `json:"targetId"`
	}
	c.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	c.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	p := &page{c: c, session: att.SessionID}
	for _, d := range []string{"Page.enable", "Runtime.enable", "Log.enable", "Network.enable"} {
		c.call(p.session, d, nil, nil)
	}
	c.call(p.session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	return p
}

func (p *page) navigate(url string) {
	p.c.call(p.session, "Page.navigate", map[string]any{"url": url}, nil)
	p.c.waitEvent(p.session, "Page.loadEventFired")
}

// eval evaluates a JavaScript expression and decodes its JSON-able value.
func (p *page) eval(expr string, v any) {
	p.c.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	p.c.call(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	if res.Exception != nil {
		p.c.t.Fatalf("evaluate: %s", res.Exception.Text)
	}
	if err := json.Unmarshal(res.Result.Value, v); err != nil {
		p.c.t.Fatalf("evaluate: %v in %s", err, res.Result.Value)
	}
}

// screenshot returns a PNG of the viewport.
func (p *page) screenshot() []byte {
	var res struct {
		Data string `json:"data"`
	}
	p.c.call(p.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &res)
	b, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		p.c.t.Fatal(err)
	}
	return b
}

// problems lists the page's console errors and warnings, uncaught
// exceptions and log errors, and the URLs it requested.
func (p *page) problems() (msgs []string, urls []string) {
	for _, e := range p.c.events {
		if e.SessionID != p.session {
			continue
		}
		switch e.Method {
		case "Runtime.consoleAPICalled":
			var ev struct {
				Type string            `json:"type"`
				Args []json.RawMessage `json:"args"`
			}
			json.Unmarshal(e.Params, &ev)
			if ev.Type == "error" || ev.Type == "warning" || ev.Type == "assert" {
				msgs = append(msgs, fmt.Sprintf("console.%s: %s", ev.Type, ev.Args))
			}
		case "Runtime.exceptionThrown":
			msgs = append(msgs, "exception: "+string(e.Params))
		case "Log.entryAdded":
			var ev struct {
				Entry struct {
					Level, Text, URL string
				} `json:"entry"`
			}
			json.Unmarshal(e.Params, &ev)
			if ev.Entry.Level == "error" || ev.Entry.Level == "warning" {
				msgs = append(msgs, fmt.Sprintf("log %s: %s %s", ev.Entry.Level, ev.Entry.Text, ev.Entry.URL))
			}
		case "Network.requestWillBeSent":
			var ev struct {
				Request struct{ URL string } `json:"request"`
			}
			json.Unmarshal(e.Params, &ev)
			urls = append(urls, ev.Request.URL)
		}
	}
	return msgs, urls
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// TestChromiumHarness checks that the browser checks above would see what
// they look for: a console error, an uncaught exception and a request for
// an image (to the loopback discard port: nothing leaves the machine).
func TestChromiumHarness(t *testing.T) {
	if _, err := chromiumPath(); err != nil {
		t.Skip("chromium is not installed (apt-get install chromium): cannot check the harness")
	}
	path := filepath.Join(t.TempDir(), "bad.html")
	bad := `<!DOCTYPE html><html><head><title>bad</title></head><body><img src="http://127.0.0.1:9/x.png">
<script>console.error("boom"); throw new Error("uncaught");</script></body></html>`
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startChromium(t).newPage(800, 600)
	p.navigate((&url.URL{Scheme: "file", Path: path}).String())
	msgs, urls := p.problems()
	joined := strings.Join(msgs, "\n")
	if !strings.Contains(joined, "console.error") || !strings.Contains(joined, "exception") {
		t.Errorf("harness missed the console error or the exception: %q", joined)
	}
	if !slices.Contains(urls, "http://127.0.0.1:9/x.png") {
		t.Errorf("harness missed the image request: %v", urls)
	}
}
