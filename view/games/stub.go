// Package games serves the tournament, series, league and compare pages of
// parley view.
//
// STUB (core half): the declarations the contract fixes, so that package
// view compiles until the games half lands; this file is replaced by it.
package games

import (
	"embed"
	"net/http"
)

// Found is one game output found under a directory given to parley view.
type Found struct{ Kind, Title, Dir, Route string }

// Scan finds the game outputs in dir; none is not an error.
func Scan(dir string) ([]Found, error) { return nil, nil }

// Handler serves the JSON API for found outputs under /api/games/.
func Handler(found []Found) http.Handler { return http.NotFoundHandler() }

// URLs lists every API URL the pages of found may fetch.
func URLs(found []Found) ([]string, error) { return nil, nil }

// Assets holds games.js and games.css.
//
//go:embed assets
var Assets embed.FS
