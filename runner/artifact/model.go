package artifact

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
)

// maxModelFiles bounds the files of one model directory (the receipt holds at most 100000 artifacts).
const maxModelFiles = 100000

// ModelKind returns the artifact kind of a model file from its base name:
//
//	model_config   config.json, generation_config.json
//	tokenizer      tokenizer.json, tokenizer.model, tokenizer_config.json, vocab.*, merges.txt,
//	               special_tokens_map.json
//	chat_template  chat_template.*, *.jinja
//	model_weight   *.safetensors, *.bin, *.gguf, *.pt, *.pth
//	model_file     anything else (e.g. model.safetensors.index.json, README.md)
//
// Names are matched exactly; extensions are matched without regard to case.
func ModelKind(name string) contract.ArtifactKind {
	ext := strings.ToLower(path.Ext(name))
	switch {
	case name == "config.json" || name == "generation_config.json":
		return contract.ArtifactKindModelConfig
	case name == "tokenizer.json" || name == "tokenizer.model" || name == "tokenizer_config.json" ||
		name == "merges.txt" || name == "special_tokens_map.json" || strings.HasPrefix(name, "vocab."):
		return contract.ArtifactKindTokenizer
	case strings.HasPrefix(name, "chat_template.") || ext == ".jinja":
		return contract.ArtifactKindChatTemplate
	case ext == ".safetensors" || ext == ".bin" || ext == ".gguf" || ext == ".pt" || ext == ".pth":
		return contract.ArtifactKindModelWeight
	}
	return contract.ArtifactKindModelFile
}

// ModelFiles lists the files of a model directory with their kinds (ModelKind), sorted by path.
// Path is relative to dir (slash-separated); Abs is absolute. Hidden files and directories (names
// starting with ".", such as .cache/ or .gitattributes) are skipped.
//
// dir itself may be a symlink (it is resolved once), but a symlink inside it is refused: the
// receipt binds the bytes that were read, and a link could point anywhere, including outside the
// directory (a Hugging Face cache snapshot is all links into ../../blobs; download with
// --local-dir to get a directory of regular files). Other non-regular files are refused too.
func ModelFiles(dir string) ([]File, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("model directory %s: %w", dir, err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("model directory %s: %w", dir, err)
	}
	var files []File
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			if !d.IsDir() {
				return errors.New("not a directory")
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symlink (refused: model files must be regular files inside the directory)", rel)
		case d.IsDir():
			return nil
		case !t.IsRegular():
			return fmt.Errorf("%s is not a regular file (%s)", rel, t)
		}
		if len(files) == maxModelFiles {
			return fmt.Errorf("more than %d files", maxModelFiles)
		}
		files = append(files, File{Kind: ModelKind(d.Name()), Path: rel, Abs: p})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("model directory %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("model directory %s: no files", dir)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}
