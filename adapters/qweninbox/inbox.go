package qweninbox

import (
	"bufio"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Receipt is one delivery_status control frame a Qwen Code session sent to
// our inbox (Cross-Session Protocol frame v1, Qwen Code 0.24.4):
//
//	{"msgV":1,"msgId":"…","type":"control","action":"delivery_status","status":"delivered",
//	 "origMsgId":"<our msgId>","from":"<its ipcPath>","reason":"…"}
//
// Status is held, delivered, denied, refused, expired, misaddressed or
// dropped (with DropReason rate-limited, duplicate or queue-full and
// DroppedMsgIDs settling a burst); a later Qwen Code may add words.
type Receipt struct {
	Status        string   `json:"status"`
	OrigMsgID     string   `json:"origMsgId"`
	From          string   `json:"from"`
	Reason        string   `json:"reason"`
	DropReason    string   `json:"dropReason"`
	DroppedMsgIDs []string `json:"droppedMsgIds"`
}

// About reports whether the receipt settles msgID.
func (r Receipt) About(msgID string) bool {
	if r.OrigMsgID == msgID {
		return true
	}
	for _, id := range r.DroppedMsgIDs {
		if id == msgID {
			return true
		}
	}
	return false
}

// UserFrame is a message a Qwen Code session (or any peer holding our
// token) sent to our inbox: a reply, since our address is only ever given
// to the session we wrote to. Text is message.content as sent.
type UserFrame struct {
	MsgID    string
	From     string
	FromName string
	Text     string
}

// Inbox is a short-lived inbox socket of peerctl's own: the `from` of the
// frames it sends, where Qwen Code sessions connect back with receipts
// (and, with replies, user frames). It lives in a fresh 0700 folder under
// dir and accepts a connection only when its first line is an auth line
// with the inbox's own token (the `replyToken` we sent). Close removes it.
type Inbox struct {
	path    string
	token   string
	ln      *net.UnixListener
	cleanup func()

	receipts chan Receipt
	users    chan UserFrame
	done     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
}

// lineDeadline bounds one connection to our inbox (Qwen Code's own inbox
// gives a sender 30 s for a complete line; ours is only for receipts).
const lineDeadline = 10 * time.Second

// maxLine caps one line read from a connection (Qwen Code's cap: 1 MiB).
const maxLine = 1 << 20

// OpenInbox binds a new inbox socket in a fresh folder under dir (dir ""
// means $XDG_RUNTIME_DIR when set, else the system temp folder).
func OpenInbox(dir string) (*Inbox, error) {
	if dir == "" {
		dir = os.Getenv("XDG_RUNTIME_DIR")
		if fi, err := os.Stat(dir); dir == "" || err != nil || !fi.IsDir() {
			dir = os.TempDir()
		}
	}
	folder, err := os.MkdirTemp(dir, "peerctl-inbox-")
	if err != nil {
		return nil, fmt.Errorf("open reply inbox: %w", err)
	}
	if err := os.Chmod(folder, 0o700); err != nil {
		os.RemoveAll(folder)
		return nil, fmt.Errorf("open reply inbox: %w", err)
	}
	path := filepath.Join(folder, "in.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		os.RemoveAll(folder)
		return nil, fmt.Errorf("open reply inbox: %w", err)
	}
	_ = os.Chmod(path, 0o600)
	var tok [32]byte
	if _, err := rand.Read(tok[:]); err != nil {
		ln.Close()
		os.RemoveAll(folder)
		return nil, fmt.Errorf("open reply inbox: %w", err)
	}
	return newInbox(path, hex.EncodeToString(tok[:]), ln, func() { os.RemoveAll(folder) }), nil
}

func newInbox(path, token string, ln *net.UnixListener, cleanup func()) *Inbox {
	in := &Inbox{path: path, token: token, ln: ln, cleanup: cleanup,
		receipts: make(chan Receipt, 16), users: make(chan UserFrame, 16), done: make(chan struct{})}
	in.wg.Add(1)
	go in.serve()
	return in
}

// Path is the inbox socket's path (the frames' "from").
func (in *Inbox) Path() string { return in.path }

// token is the replyToken a session must present (never printed).
func (in *Inbox) replyToken() string { return in.token }

// Receipts delivers every authenticated delivery_status frame.
func (in *Inbox) Receipts() <-chan Receipt { return in.receipts }

// Messages delivers every authenticated user frame (a reply).
func (in *Inbox) Messages() <-chan UserFrame { return in.users }

// Close stops accepting, ends every connection, waits for them and removes
// the socket and its folder.
func (in *Inbox) Close() error {
	in.once.Do(func() {
		close(in.done)
		in.ln.Close()
		in.wg.Wait()
		in.cleanup()
	})
	return nil
}

func (in *Inbox) serve() {
	defer in.wg.Done()
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := in.ln.AcceptUnix()
		if err != nil {
			return
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			in.handle(c)
		}()
	}
}

type inFrame struct {
	MsgV    int    `json:"msgV"`
	Type    string `json:"type"`
	Token   string `json:"token"`
	Action  string `json:"action"`
	MsgID   string `json:"msgId"`
	From    string `json:"from"`
	Name    string `json:"fromName"`
	Message struct {
		Content string `json:"content"`
	} `json:"message"`
	Receipt
}

func (in *Inbox) handle(c *net.UnixConn) {
	defer c.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-in.done:
			c.Close()
		case <-stop:
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(lineDeadline))
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	authed := false
	for sc.Scan() {
		var f inFrame
		if json.Unmarshal(sc.Bytes(), &f) != nil || f.MsgV != 1 {
			if !authed {
				return
			}
			continue
		}
		if !authed {
			if f.Type != "auth" || subtle.ConstantTimeCompare([]byte(f.Token), []byte(in.token)) != 1 {
				return // as Qwen Code does: a wrong or missing auth line drops the connection
			}
			authed = true
			continue
		}
		switch {
		case f.Type == "control" && f.Action == "delivery_status":
			select {
			case in.receipts <- withFrom(f.Receipt, f.From):
			case <-in.done:
				return
			}
		case f.Type == "user":
			select {
			case in.users <- UserFrame{MsgID: f.MsgID, From: f.From, FromName: f.Name, Text: f.Message.Content}:
			case <-in.done:
				return
			}
		}
	}
}

func withFrom(r Receipt, from string) Receipt {
	r.From = from
	return r
}

// SenderInboxName is the socket of peerctl's sender inbox, in a 0700
// folder of its own: <dir>/peerctl-<uid>/inbox.sock.
const SenderInboxName = "inbox.sock"

// OpenSenderInbox opens peerctl's sender inbox at its stable path,
// <dir>/peerctl-<uid>/inbox.sock (dir "" as in OpenInbox), held under an
// exclusive flock on inbox.lock beside it for the inbox's life. Qwen Code
// keys a sender by its "from" (0.24.4: the same body from the same sender
// within 30 s is dropped as a duplicate), so a stable path makes a blind
// resend of the same text "dropped" rather than delivered twice. When the
// lock is held (another send is running) or the folder is not ours and
// private, it opens a fresh inbox instead (OpenInbox).
func OpenSenderInbox(dir string) (*Inbox, error) {
	if dir == "" {
		dir = os.Getenv("XDG_RUNTIME_DIR")
		if fi, err := os.Stat(dir); dir == "" || err != nil || !fi.IsDir() {
			dir = os.TempDir()
		}
	}
	folder := filepath.Join(dir, fmt.Sprintf("peerctl-%d", os.Getuid()))
	if in, ok := openShared(folder); ok {
		return in, nil
	}
	return OpenInbox(dir)
}
