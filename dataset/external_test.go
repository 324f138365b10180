package dataset

// The test helpers that the external tests (package dataset_test) use.
var (
	// TestRollout is testRollout.
	TestRollout = testRollout
	// TestBatchRows is testBatchRows.
	TestBatchRows = testBatchRows
	// SampleDilemmas is sampleDilemmas.
	SampleDilemmas = sampleDilemmas
)
