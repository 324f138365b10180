package main

import (
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// observedApp is an app whose logger records the entries at level and
// above, for tests of what a command logs.
func observedApp(level zapcore.Level) (*app, *observer.ObservedLogs) {
	core, logs := observer.New(level)
	return &app{log: zap.New(core)}, logs
}
