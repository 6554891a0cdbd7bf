package jira

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// adfNode is one node of an Atlassian Document Format document, the rich-text format of
// Jira Cloud descriptions and comments. Unknown node types keep their content.
type adfNode struct {
	Type    string         `json:"type"`
	Version int            `json:"version,omitempty"` // 1 on the root "doc" node
	Text    string         `json:"text,omitempty"`
	Attrs   map[string]any `json:"attrs,omitempty"`
	Marks   []adfMark      `json:"marks,omitempty"`
	Content []adfNode      `json:"content,omitempty"`
}

type adfMark struct {
	Type  string         `json:"type"`
	Attrs map[string]any `json:"attrs,omitempty"`
}

// maxADFDepth bounds the recursion of the flattener; a deeper document is cut there
// rather than allowed to exhaust the stack.
const maxADFDepth = 64

// richText turns a Jira text field into plain text: an ADF document (Cloud v3) is
// flattened, a string (Data Center v2 wiki markup) is kept, null is "".
func richText(raw json.RawMessage) (string, error) {
	s := strings.TrimSpace(string(raw))
	switch {
	case s == "" || s == "null":
		return "", nil
	case s[0] == '"':
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", err
		}
		return v, nil
	case s[0] == '{':
		var doc adfNode
		if err := json.Unmarshal(raw, &doc); err != nil {
			return "", err
		}
		return flattenADF(doc), nil
	}
	return "", fmt.Errorf("rich text must be an ADF document, a string or null (got %.20s)", s)
}

// flattenADF renders an ADF document as plain text with light Markdown: blocks are
// separated by blank lines, headings get #, list items -, 1. or [ ], code blocks fences,
// quotes >; mentions, emoji, dates and cards become their text; links keep their URL.
func flattenADF(doc adfNode) string {
	return strings.TrimSpace(renderBlocks(doc.Content, 0))
}

func renderBlocks(nodes []adfNode, depth int) string {
	if depth > maxADFDepth {
		return ""
	}
	parts := make([]string, 0, len(nodes))
	var inline []adfNode // consecutive inline nodes at block level form one paragraph
	flushInline := func() {
		if len(inline) > 0 {
			if s := renderInline(inline, depth+1); strings.TrimSpace(s) != "" {
				parts = append(parts, s)
			}
			inline = nil
		}
	}
	for _, n := range nodes {
		if isInline(n.Type) {
			inline = append(inline, n)
			continue
		}
		flushInline()
		if s := renderBlock(n, depth+1); strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	flushInline()
	return strings.Join(parts, "\n\n")
}

func isInline(t string) bool {
	switch t {
	case "text", "hardBreak", "mention", "emoji", "inlineCard", "status", "date", "placeholder", "inlineExtension", "mediaInline":
		return true
	}
	return false
}

func renderBlock(n adfNode, depth int) string {
	if depth > maxADFDepth {
		return ""
	}
	switch n.Type {
	case "paragraph":
		return renderInline(n.Content, depth)
	case "heading":
		level := min(max(intAttr(n.Attrs, "level", 1), 1), 6)
		return strings.Repeat("#", level) + " " + renderInline(n.Content, depth)
	case "bulletList":
		return renderList(n.Content, depth, func(int) string { return "- " })
	case "orderedList":
		start := intAttr(n.Attrs, "order", 1)
		return renderList(n.Content, depth, func(i int) string { return strconv.Itoa(start+i) + ". " })
	case "taskList", "decisionList":
		return renderList(n.Content, depth, func(int) string { return "" })
	case "taskItem", "decisionItem":
		box := "- [ ] "
		if strAttr(n.Attrs, "state") == "DONE" || strAttr(n.Attrs, "state") == "DECIDED" {
			box = "- [x] "
		}
		return indent(box, renderBlocks(n.Content, depth))
	case "codeBlock":
		var b strings.Builder
		for _, c := range n.Content {
			b.WriteString(c.Text)
		}
		return "```" + strAttr(n.Attrs, "language") + "\n" + b.String() + "\n```"
	case "blockquote":
		return prefixLines("> ", renderBlocks(n.Content, depth))
	case "rule":
		return "---"
	case "table":
		rows := make([]string, 0, len(n.Content))
		for _, row := range n.Content {
			cells := make([]string, 0, len(row.Content))
			for _, cell := range row.Content {
				cells = append(cells, strings.ReplaceAll(renderBlocks(cell.Content, depth+1), "\n", " "))
			}
			rows = append(rows, "| "+strings.Join(cells, " | ")+" |")
		}
		return strings.Join(rows, "\n")
	case "blockCard", "embedCard":
		return strAttr(n.Attrs, "url")
	case "media", "mediaSingle", "mediaGroup":
		return ""
	}
	// panel, expand, layoutSection, extensions and node types added after this was
	// written: keep what they contain.
	return renderBlocks(n.Content, depth)
}

// renderList renders list items, each prefixed by marker(i), continuation lines indented.
func renderList(items []adfNode, depth int, marker func(int) string) string {
	lines := make([]string, 0, len(items))
	for i, it := range items {
		if it.Type == "taskItem" || it.Type == "decisionItem" {
			lines = append(lines, renderBlock(it, depth+1))
			continue
		}
		lines = append(lines, indent(marker(i), strings.ReplaceAll(renderBlocks(it.Content, depth+1), "\n\n", "\n")))
	}
	return strings.Join(lines, "\n")
}

// indent puts first before the first line of s and as many spaces before the others.
func indent(first, s string) string {
	pad := strings.Repeat(" ", len(first))
	lines := strings.Split(s, "\n")
	for i := range lines {
		if i == 0 {
			lines[i] = first + lines[i]
		} else if lines[i] != "" {
			lines[i] = pad + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

func prefixLines(p, s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(p+lines[i], " ")
	}
	return strings.Join(lines, "\n")
}

func renderInline(nodes []adfNode, depth int) string {
	if depth > maxADFDepth {
		return ""
	}
	var b strings.Builder
	for _, n := range nodes {
		switch n.Type {
		case "text":
			b.WriteString(markText(n))
		case "hardBreak":
			b.WriteByte('\n')
		case "mention":
			t := strAttr(n.Attrs, "text")
			if t == "" {
				t = strAttr(n.Attrs, "id")
			}
			if t != "" && !strings.HasPrefix(t, "@") {
				t = "@" + t
			}
			b.WriteString(t)
		case "emoji":
			if t := strAttr(n.Attrs, "text"); t != "" {
				b.WriteString(t)
			} else {
				b.WriteString(strAttr(n.Attrs, "shortName"))
			}
		case "inlineCard":
			b.WriteString(strAttr(n.Attrs, "url"))
		case "status":
			b.WriteString("[" + strAttr(n.Attrs, "text") + "]")
		case "date":
			if ms, err := strconv.ParseInt(strAttr(n.Attrs, "timestamp"), 10, 64); err == nil {
				b.WriteString(time.UnixMilli(ms).UTC().Format(time.DateOnly))
			}
		default:
			if t := strAttr(n.Attrs, "text"); t != "" {
				b.WriteString(t)
			}
			b.WriteString(renderInline(n.Content, depth+1))
		}
	}
	return b.String()
}

// markText renders a text node with the marks that carry meaning in plain text: inline
// code in backticks, a link's URL after its text.
func markText(n adfNode) string {
	s := n.Text
	for _, m := range n.Marks {
		switch m.Type {
		case "code":
			s = "`" + s + "`"
		case "link":
			if href := strAttr(m.Attrs, "href"); href != "" && href != n.Text {
				s += " (" + href + ")"
			}
		}
	}
	return s
}

func strAttr(attrs map[string]any, key string) string {
	switch v := attrs[key].(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}

func intAttr(attrs map[string]any, key string, def int) int {
	if v, ok := attrs[key].(float64); ok && v == float64(int(v)) && v >= 0 && v < 1e6 {
		return int(v)
	}
	return def
}

// textADF wraps plain text in an ADF document, one paragraph per blank-line-separated
// block and a hard break for each other newline, as Jira Cloud v3 requires for comments.
func textADF(text string) adfNode {
	doc := adfNode{Type: "doc", Version: 1, Content: []adfNode{}}
	for _, para := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		p := adfNode{Type: "paragraph", Content: []adfNode{}}
		for i, line := range strings.Split(para, "\n") {
			if i > 0 {
				p.Content = append(p.Content, adfNode{Type: "hardBreak"})
			}
			if line != "" {
				p.Content = append(p.Content, adfNode{Type: "text", Text: line})
			}
		}
		doc.Content = append(doc.Content, p)
	}
	return doc
}
