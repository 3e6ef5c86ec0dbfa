package slack

import (
	"context"
	"errors"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// RunSocket takes interactions over Socket Mode until ctx ends: the same
// handling as over HTTP, each envelope acknowledged with the reply (a
// modal's field errors ride in the ack's payload). slack-go's client
// opens the connection with apps.connections.open and reconnects.
func (s *Service) RunSocket(ctx context.Context) error {
	client := socketmode.New(s.api)
	done := make(chan error, 1)
	go func() { done <- client.RunContext(ctx) }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		case evt := <-client.Events:
			s.socketEvent(ctx, client, evt)
		}
	}
}

// socketEvent handles one event of the socket: an interaction is handled
// and acknowledged; anything else is acknowledged if it asks to be.
func (s *Service) socketEvent(ctx context.Context, client *socketmode.Client, evt socketmode.Event) {
	switch evt.Type {
	case socketmode.EventTypeConnectionError, socketmode.EventTypeInvalidAuth:
		s.o.Log.Warn("slack: socket mode", "event", string(evt.Type), "data", evt.Data)
	case socketmode.EventTypeInteractive:
		cb, ok := evt.Data.(slackapi.InteractionCallback)
		if !ok || evt.Request == nil {
			return
		}
		reply, err := s.Interact(ctx, &cb)
		if err != nil {
			s.o.Log.ErrorContext(ctx, "slack: interaction failed", "type", cb.Type, "err", err)
		}
		if reply != nil {
			client.Ack(*evt.Request, reply)
		} else {
			client.Ack(*evt.Request)
		}
		return
	}
	if evt.Request != nil && evt.Request.EnvelopeID != "" {
		client.Ack(*evt.Request)
	}
}
