// Package all registers every built-in model kind (package kinds): import it for its side
// effect where the commands or the library dispatch over all of them.
//
//	import _ "github.com/toolret/toolret/kinds/all"
//
// It is the one list of the built-in kinds' packages; a kind defined elsewhere registers
// when its own package is imported.
package all

import (
	// Each package registers its kind; recipe adds the bi-encoder's Train, export the
	// bi-encoder's, cross-encoder's and classifier's export facets.
	_ "github.com/toolret/toolret/export"
	_ "github.com/toolret/toolret/models/biencoder"
	_ "github.com/toolret/toolret/models/classifier"
	_ "github.com/toolret/toolret/models/colt"
	_ "github.com/toolret/toolret/models/crossencoder"
	_ "github.com/toolret/toolret/models/pretrain"
	_ "github.com/toolret/toolret/models/refiner"
	_ "github.com/toolret/toolret/recipe"
)
