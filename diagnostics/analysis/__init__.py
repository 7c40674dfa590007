"""The analysis engine, in the order data flows: rates -> rules -> findings -> events -> correlation -> localization,
and its entry points: one node's Diagnosis (`node`) and a fleet's (`fleet`)."""
