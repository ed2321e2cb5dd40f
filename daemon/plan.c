/* plan.c - to be written */
