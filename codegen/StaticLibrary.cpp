// writeStaticLibrary (Kernel.h): an ar archive of the AOT runtime's members and a library's object, written
// by LLVM's archive writer (GNU format, with the symbol table linkers read).
#include "codegen/Kernel.h"
#include "ir/SourceLoc.h"

#include <llvm/Object/Archive.h>
#include <llvm/Object/ArchiveWriter.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

namespace tg::codegen {

void writeStaticLibrary(const std::string &path, const std::string &base,
                        const std::vector<std::pair<std::string, std::string>> &objects) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> baseFile = llvm::MemoryBuffer::getFile(base);
  if (!baseFile)
    throw ir::UserError("cannot read the AOT runtime " + base + ": " + baseFile.getError().message());
  llvm::Expected<std::unique_ptr<llvm::object::Archive>> archive =
      llvm::object::Archive::create((*baseFile)->getMemBufferRef());
  if (!archive) throw ir::UserError(base + " is not an archive: " + llvm::toString(archive.takeError()));
  std::vector<llvm::NewArchiveMember> members;
  llvm::Error error = llvm::Error::success();
  for (const llvm::object::Archive::Child &child : (*archive)->children(error)) {
    llvm::Expected<llvm::NewArchiveMember> member = llvm::NewArchiveMember::getOldMember(child, true);
    if (!member) throw ir::UserError(base + ": " + llvm::toString(member.takeError()));
    members.push_back(std::move(*member));
  }
  if (error) throw ir::UserError(base + ": " + llvm::toString(std::move(error)));
  for (const auto &[name, bytes] : objects)
    members.emplace_back(llvm::MemoryBufferRef(bytes, name));
  if (llvm::Error written = llvm::writeArchive(path, members, llvm::SymtabWritingMode::NormalSymtab,
                                               llvm::object::Archive::K_GNU, true, false))
    throw ir::UserError("cannot write " + path + ": " + llvm::toString(std::move(written)));
}

} // namespace tg::codegen
