package qweninbox

// InboxToken exposes the reply token to tests.
func InboxToken(in *Inbox) string { return in.replyToken() }
