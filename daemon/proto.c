/* proto.c - to be written */
#include "proto.h"
