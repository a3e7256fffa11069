package cli

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// xmlEscape writes a launchd plist's strings as encoding/xml's EscapeText
// does, without linking encoding/xml into peerctl: each character XML
// gives a meaning escaped, the line ends kept as references, what XML 1.0
// cannot hold replaced.
func TestXMLEscape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"&", "&amp;"},
		{"<", "&lt;"},
		{">", "&gt;"},
		{`"`, "&#34;"},
		{"'", "&#39;"},
		{"\t", "&#x9;"},
		{"\n", "&#xA;"},
		{"\r", "&#xD;"},
		{"\x00", "\uFFFD"},
		{"\x1b[31m", "\uFFFD[31m"},
		{"\uFFFE\uFFFF", "\uFFFD\uFFFD"},
		{"\xff", "\uFFFD"},
		{"/Users/a b/bin/peerctl", "/Users/a b/bin/peerctl"},
		{"é\u007f\U0001F600", "é\u007f\U0001F600"},
		{`<key>&"it's"</key>`, "&lt;key&gt;&amp;&#34;it&#39;s&#34;&lt;/key&gt;"},
	} {
		assert.Equal(t, tt.want, xmlEscape(tt.in), "%q", tt.in)
		var b strings.Builder
		_ = xml.EscapeText(&b, []byte(tt.in))
		assert.Equal(t, b.String(), xmlEscape(tt.in), "%q: as encoding/xml escapes it", tt.in)
	}
}
