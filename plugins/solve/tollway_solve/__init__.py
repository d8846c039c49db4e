"""Tollway's solve family: one `solve` tool whose `problem` names a family
(routing, allocation, packing, schedule); each family is a module implementing
`tollway_solve.family.Family`."""
