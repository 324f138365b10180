package scenario

// theme is the story a generated scenario is told in: its issues and the
// stakeholders the five parties represent. Scores and BATNAs are drawn
// separately; a theme only names things.
type theme struct {
	title, description string
	issues             [5]themeIssue
	stakeholders       [5][2]string // name, description
}

type themeIssue struct {
	name    string
	options [4]string
}

var themes = []theme{
	{
		title:       "Harbour district redevelopment",
		description: "The city must agree on a plan to redevelop its old harbour district.",
		issues: [5]themeIssue{
			{"Land use", [4]string{"mostly housing", "mixed housing and offices", "mostly offices", "public park and culture"}},
			{"Affordable housing share", [4]string{"40%", "25%", "15%", "5%"}},
			{"Funding", [4]string{"city bonds", "developer-funded", "state grant", "tolls and fees"}},
			{"Timeline", [4]string{"3 years", "5 years", "7 years", "10 years in phases"}},
			{"Waterfront access", [4]string{"fully public", "public promenade only", "mostly private", "industrial use kept"}},
		},
		stakeholders: [5][2]string{
			{"the Developers' Consortium", "a group of builders who must make the project pay"},
			{"the Tenants' Union", "residents who fear being priced out of the district"},
			{"the Port Workers' Guild", "dock workers whose jobs depend on the working harbour"},
			{"the City Finance Office", "officials who must keep the city's debt in check"},
			{"the Waterfront Heritage Society", "a group that protects the district's history and shoreline"},
		},
	},
	{
		title:       "Regional hospital network merger",
		description: "Three hospitals and their partners must agree on the terms of a regional merger.",
		issues: [5]themeIssue{
			{"Governance", [4]string{"single board", "federated boards", "rotating chair", "state oversight"}},
			{"Emergency departments", [4]string{"keep all three", "merge into two", "one central site", "one site plus urgent care"}},
			{"Staff contracts", [4]string{"harmonise upward", "keep current terms", "harmonise to the average", "new merged contract"}},
			{"Capital investment", [4]string{"new central hospital", "renovate all sites", "digital systems first", "minimal investment"}},
			{"Rural clinics", [4]string{"expand", "keep as is", "convert to telehealth", "close the smallest"}},
		},
		stakeholders: [5][2]string{
			{"the Metro Hospital board", "the largest hospital, which wants to lead the network"},
			{"the Nurses' Federation", "the union representing nurses across all three sites"},
			{"the Rural Health Alliance", "towns that depend on small clinics far from the city"},
			{"the Regional Treasury", "the public funder that pays for most of the investment"},
			{"the Patients' Council", "an advocacy group for patients and their families"},
		},
	},
	{
		title:       "River dam and water sharing",
		description: "Communities along a river must agree on how a new dam is built and its water shared.",
		issues: [5]themeIssue{
			{"Dam height", [4]string{"low weir", "medium dam", "high dam", "no dam, canals only"}},
			{"Irrigation share", [4]string{"60% of flow", "45% of flow", "30% of flow", "15% of flow"}},
			{"Hydropower revenue", [4]string{"to the state", "split by population", "to upstream towns", "to a river fund"}},
			{"Resettlement", [4]string{"full compensation and land", "cash compensation", "land swap only", "voluntary moves only"}},
			{"Environmental flow", [4]string{"strict minimum flow", "seasonal minimum", "best effort", "none"}},
		},
		stakeholders: [5][2]string{
			{"the Farmers' Cooperative", "growers who need water for irrigation"},
			{"the Power Utility", "the company that would run the hydropower plant"},
			{"the Upstream Villages", "communities whose land the reservoir would flood"},
			{"the Fisheries Board", "fishers who depend on the river's flow and fish stocks"},
			{"the Downstream City", "a growing city that needs drinking water"},
		},
	},
	{
		title:       "Technology park and university partnership",
		description: "A university, companies and the town must agree on the terms of a new technology park.",
		issues: [5]themeIssue{
			{"Location", [4]string{"on campus", "next to the rail station", "on farmland outside town", "in the old industrial zone"}},
			{"Intellectual property", [4]string{"university keeps all", "shared 50/50", "company keeps all", "open licence"}},
			{"Local hiring", [4]string{"50% local quota", "30% local quota", "training fund only", "no commitment"}},
			{"Tax terms", [4]string{"no tax relief", "5-year relief", "10-year relief", "relief tied to jobs"}},
			{"Student access", [4]string{"paid internships", "research projects", "guest lectures", "none"}},
		},
		stakeholders: [5][2]string{
			{"the University Senate", "faculty who want research freedom and student opportunities"},
			{"the Anchor Tenant", "a large company that would rent most of the park"},
			{"the Town Council", "elected officials who want jobs and tax revenue"},
			{"the Chamber of Small Business", "local firms that fear rising rents and wages"},
			{"the Residents' Association", "neighbours worried about traffic, land and housing costs"},
		},
	},
}
