package main

import (
	"context"
	"errors"
)

// mcp serves the MCP adapter; it is wired to package mcpserver when that lands.
func (c *cli) mcp(ctx context.Context, args []string) error {
	fs, _ := c.flags("mcp", "")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	return errors.New("the MCP adapter is not built yet")
}
