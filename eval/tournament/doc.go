// Package tournament is seed 001's round robin of the endowment game
// (rollout/endowment) among agents: vLLM endpoints, adapters, a run's
// trained policy and external chat models (parley tournament). A Spec,
// read from its YAML file, names the agents, the framings and the rounds;
// Schedule lists the games in a fixed order; Run plays the ones not yet
// recorded, concurrently and resumably (each game seeded by the spec's
// seed and its id, each recorded atomically in the tournament directory);
// Analyze and WriteReport turn the records into the report parley report
// writes.
package tournament
