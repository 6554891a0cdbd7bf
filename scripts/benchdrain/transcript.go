package main

import (
	"bytes"
	"fmt"
	"strings"
)

// captureParts splits a captured claude stream-json turn into its init line, the
// lines of one tool call (the assistant's tool_use and the user's tool_result), the
// other assistant lines, and the result line.
type captureParts struct {
	init, result string
	call         []string // tool_use, tool_result
	text         string   // an assistant text line
}

func splitCapture(capture []byte) (captureParts, error) {
	var p captureParts
	for _, l := range strings.Split(strings.TrimSpace(string(capture)), "\n") {
		switch {
		case strings.Contains(l, `"subtype":"init"`):
			p.init = l
		case strings.Contains(l, `"type":"result"`):
			p.result = l
		case strings.Contains(l, `"type":"tool_use"`), strings.Contains(l, `"type":"tool_result"`):
			p.call = append(p.call, l)
		case strings.Contains(l, `"type":"assistant"`) && p.text == "":
			p.text = l
		}
	}
	if p.init == "" || p.result == "" || len(p.call) != 2 || p.text == "" {
		return p, fmt.Errorf("the capture needs an init line, one tool call (tool_use and tool_result), an assistant text line and a result line")
	}
	return p, nil
}

// renumber gives a copy of a line fresh message and tool-use ids.
func renumber(line string, i int) string {
	line = strings.ReplaceAll(line, "msg_fake000", fmt.Sprintf("msg_%d_", i))
	return strings.ReplaceAll(line, "toolu_fake000", fmt.Sprintf("toolu_%d_", i))
}

// toolTranscript is one turn that makes tools tool calls: init, text, then each call,
// then a last text and the result.
func toolTranscript(capture []byte, tools int) ([]byte, error) {
	p, err := splitCapture(capture)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(p.init + "\n")
	b.WriteString(p.text + "\n")
	for i := 0; i < tools; i++ {
		for _, l := range p.call {
			b.WriteString(renumber(l, i) + "\n")
		}
	}
	b.WriteString(renumber(p.text, tools) + "\n")
	b.WriteString(p.result + "\n")
	return b.Bytes(), nil
}

// longTranscript is one turn of exactly lines lines: init, then text and tool calls
// repeated, then the result, as a long agentic turn prints them.
func longTranscript(capture []byte, lines int) ([]byte, error) {
	p, err := splitCapture(capture)
	if err != nil {
		return nil, err
	}
	if lines < 3 {
		return nil, fmt.Errorf("a transcript needs at least 3 lines")
	}
	body := append([]string{p.text}, p.call...)
	var b bytes.Buffer
	b.WriteString(p.init + "\n")
	n := 1
	for i := 0; n < lines-1; i++ {
		for _, l := range body {
			if n == lines-1 {
				break
			}
			b.WriteString(renumber(l, i) + "\n")
			n++
		}
	}
	b.WriteString(p.result + "\n")
	return b.Bytes(), nil
}
