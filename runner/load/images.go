package load

import "github.com/qualkit/qualkit/schemas/wire"

// Images (a serving case's images): each request's user message carries count PNG images of
// width x height pixels, generated from the prompt's id (package schemas/wire, which the verifier
// renders too). The client cannot count an image's tokens (each engine's vision encoder decides
// them): its prompt count is the text's, and the record says how many images it did not count
// (client_tokens.images_not_counted).

// wirePart is a content part of a user message that carries images.
type wirePart = wire.Part

type wireImageURL = wire.ImageURL

// imagePNG is image k of prompt id (wire.ImagePNG).
func imagePNG(id string, k, w, h int) ([]byte, error) { return wire.ImagePNG(id, k, w, h) }
