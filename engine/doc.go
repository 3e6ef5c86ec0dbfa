// Package engine does the work away from the pages, on any instance.
//
// A call's MCP requests (the first, and each retry with a round's answers)
// are sent by the instance that commits the call or the answer, at once,
// once the commit returns (request.go: Engine.Answer, Engine.StartCall), on
// a bounded set of goroutines. The same transaction inserts the request's
// River job, scheduled a request's timeout later, and the transaction that
// stores the server's reply removes it: the job is the safety net, which
// River sends when the instance died, stopped or could not store the reply
// first. A request no goroutine is free for, a local server's, and one a
// handshake-era server holds open go River's way at once; one a server
// could not take is sent again by its job later, until the retry window
// ends (retry.go).
//
// River's jobs, rescued by another instance when one dies, also hold a
// handshake-era session open while people answer its questions (held.go);
// poll a call the server runs as a task (tasks.go), at the server's pace,
// its questions becoming rounds and their answers going back as
// tasks/update; and expire rounds, escalate them at their deadlines, delete
// old calls, send round mail and webhooks.
//
// Local servers (stdio) run as processes of each instance's own (local.go):
// one long-lived process that 2026-07-28 requests share, started again with
// backoff when it exits, and a process of its own for each handshake-era
// call. A request that must reach another instance's process goes on that
// instance's own River queue.
//
// The engine also lists the servers' tools and keeps their catalog
// (catalog.go), asked with the person's OAuth connection, renewed when due
// (oauth.go), and beats each instance's heartbeat (heartbeat.go).
//
// Its tests run real engines over Postgres against the demo server and the
// fakes of mcptest: the Python servers, the tasks extension's server and the
// progress reporter. Local servers are driven as real processes (mcptest's
// fakes over stdio) by the journeys.
package engine
