package main

import "errors"

func (h *harness) backlog() (*report, error) { return nil, errors.New("later") }
func (h *harness) agents() (*report, error)  { return nil, errors.New("later") }
func (h *harness) latency() (*report, error) { return nil, errors.New("later") }
