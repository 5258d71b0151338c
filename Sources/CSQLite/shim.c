#include "CSQLite.h"
