package sim

// vocabWords is the fixed built-in word list of the simulated tokenizer. Each
// word contributes up to four pieces, in this order: the word, the word with a
// leading space, the capitalized word and the capitalized word with a leading
// space (duplicates are skipped). Piece ids follow the 256 byte tokens in list
// order, so this list must only ever be appended to: reordering it changes
// every token id.
const vocabWords = `the of and to a in is it you that he was for on are with as I his they be at
one have this from or had by not word but what some we can out other were all there when up use your
how said an each she which do their time if will way about many then them write would like so these
her long make thing see him two has look more day could go come did number sound no most people my
over know water than call first who may down side been now find any new work part take get place made
live where after back little only round man year came show every good me give our under name very
through just form sentence great think say help low line differ turn cause much mean before move right
boy old too same tell does set three want air well also play small end put home read hand port large
spell add even land here must big high such follow act why ask men change went light kind off need
house picture try us again animal point mother world near build self earth father head stand own page
should country found answer school grow study still learn plant cover food sun four between state keep
eye never last let thought city tree cross farm hard start might story saw far sea draw left late run
while press close night real life few north open seem next white children begin got walk example ease
paper group always music those both mark often letter until mile river car feet care second book carry
took science eat room friend began idea fish mountain stop once base hear horse cut sure watch color
face wood main enough plain girl usual young ready above ever red list though feel talk bird soon body
dog family direct pose leave song measure door product black short class wind question happen complete
ship area half rock order fire south problem piece told knew pass since top whole king space heard best
hour better true during hundred five remember step early hold west ground interest reach fast sing listen
six table travel less morning ten simple several toward war lay against pattern slow center love person
money serve appear road map rain rule govern pull cold notice voice unit power town fine certain fly
fall lead cry dark machine note wait plan figure star box field rest correct able pound done beauty
drive stood contain front teach week final gave green quick develop ocean warm free minute strong
special mind behind clear tail produce fact street inch nothing course stay wheel full force blue object
decide surface deep moon island foot system busy test record boat common gold possible plane dry wonder
laugh thousand ago ran check game shape hot miss brought heat snow bring yes distant fill east paint
language among
agency collective agree agreed agreement proposal propose accept accepted together everyone shared
share mutual mutually empower empowering empowered empowers involved community solution solutions
negotiate negotiation persona personas compromise benefit benefits outcome outcomes trust respect
autonomy fair fairness justice honest honesty truth loyalty confidentiality client patient privacy
safety duty integrity ethical ethics moral value values responsibility accountable accountability
transparency transparent support protect protecting wellbeing dignity consent harm risk risks cost costs
balance goal goals interests concern concerns priority priorities decision decisions perspective
approach path option options steps process structured concrete ensure address acknowledge understand
suggest consider recommend offer counter position stakeholder stakeholders partner team colleague
manager employee company career relationship individual personal gain convenience inclusive
collaborate collaboration collaborative cooperative cooperation consensus growth flourish flourishing
capacity capabilities expand expansion sustainable term however therefore because although instead
rather further moreover additionally finally sincerely deal AGREE agent agents dialogue task tasks
response responses score rationale judge winner tie plan plans legal authorities voluntarily disclose
disclosing framing preserving professional relational interpersonal etiquette dilemma dilemmas
stakes action actions course best guide toward fully weigh care carefully worry still raise concern
thank point points hear heard suggest adjust where forward move both keeps keep intact giving give
voices voice checks check first then revisit handle asks matters most open simple priority open
`
