// Package app is parley's one composition root: it builds the inference
// clients, judges, games, players and tournament agents a command needs
// from the typed configuration (package config), and runs the command with
// the packages that do the work. Only cmd/parley imports it; no other
// package reads configuration, flags or the environment's secrets.
package app
