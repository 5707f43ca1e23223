package reproduce

// Papers are the papers `stacktool reproduce` knows, each a table of its
// headline experiments: the figures the project's papers list names
// (Ricochet, MFLOW), and for QSM and Spread the "What must hold" of
// issues 10 and 11.
var Papers = []Paper{ricochet, mflow, qsm, spread}
